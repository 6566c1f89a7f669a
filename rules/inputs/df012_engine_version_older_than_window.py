"""DF012: the selected engine release is older than the oldest one whose facts dflash-compat has."""

from __future__ import annotations

from dflash_compat.checker import BACKENDS, Rule, RuleContext
from dflash_compat.rules.inputs._helpers import fallback_violations


def check(ctx: RuleContext):
    yield from fallback_violations(ctx, "older")


RULE = Rule(
    code="DF012",
    name="engine-version-older-than-window",
    severity="warning",
    backends=BACKENDS,
    check=check,
    what="The engine release the check judges against (from --engine-version, the settings file's "
    "`engine-versions` table, or the version installed here) is older than every release whose facts ship with "
    "dflash-compat (the window; docs/engine-facts.md lists it).",
    why="Older releases lack what newer ones added (vLLM before 0.33 has no XPress drafts; transformers "
    "before 5.25 refuses assisted generation with stateful models). The check falls back to the oldest bundled "
    "facts, which may describe behaviour your release does not have. A release older than the engine's first "
    "with DFlash (vLLM 0.20.0, SGLang 0.5.11, transformers 5.15.0, speculators 0.5.0: docs/engine-facts.md) "
    "cannot run a DFlash pair at all: an error.",
    example="dflash-check TARGET --draft DRAFT --engine-version vllm==0.31.0 (window: vLLM 0.32.0-0.34.0)",
    fix="Run `dflash-check facts refresh --engine NAME==VERSION` to read that release's wheel into your cache, "
    "then check again; or pin a bundled release with --engine-version.",
)
