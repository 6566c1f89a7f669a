"""The preflight pipeline: resolve -> describe (specs) -> inspect (deep facts, optional) -> rules -> report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from .engine import BACKENDS, CheckContext, Rule, check_rules, select_rules
from .exceptions import ConfigError
from .options import CheckOptions
from .report import Report, build_report
from .resolve import Resolved, resolve
from .specs import DraftSpec, TargetSpec, parse_draft_config, parse_target_config

if TYPE_CHECKING:
    from .engine_versions import Versions

__all__ = ["CheckRequest", "load_target", "load_draft", "run_check"]


@dataclass(frozen=True)
class CheckRequest:
    """One `dflash-check TARGET --draft DRAFT` run: what to check, against which backends and rules."""

    target: str
    draft: str
    backends: Sequence[str] = BACKENDS
    select: Sequence[str] = ()
    ignore: Sequence[str] = ()
    options: CheckOptions = field(default_factory=CheckOptions)
    revision: Optional[str] = None
    draft_revision: Optional[str] = None
    token: Optional[str] = None
    framework: str = "auto"  # how the deep check builds the target: auto, torch (transformers) or mlx
    strict: bool = False  # a warning fails its backend too
    # per-rule levels (code or prefix -> error / warning / info / ignore), e.g. from [tool.dflash-check]
    severity: Mapping[str, str] = field(default_factory=dict)
    # The engine releases to judge against (engine_versions.select_versions); None: what is installed, else
    # the newest bundled release of each engine.
    versions: Optional["Versions"] = None


def load_target(resolved: Resolved) -> TargetSpec:
    raw = resolved.json("config.json")
    if raw is None:
        raise ConfigError(f"target {resolved.ref}: no config.json")
    gen = _optional_json(resolved, "generation_config.json")
    tok = _optional_json(resolved, "tokenizer_config.json")
    return parse_target_config(raw, resolved.ref, generation_config=gen, tokenizer_config=tok)


def _optional_json(resolved: Resolved, name: str) -> Optional[dict]:
    # Secondary files only refine the target's facts; a broken one must not hide the check.
    try:
        value = resolved.json(name)
    except ConfigError:
        return None
    return value if isinstance(value, dict) else None


def load_draft(resolved: Resolved) -> DraftSpec:
    raw = resolved.json("config.json")
    if raw is None:
        raise ConfigError(f"draft {resolved.ref}: no config.json")
    return parse_draft_config(raw, resolved.ref)


def run_check(req: CheckRequest, rules: Optional[Sequence[Rule]] = None) -> Report:
    """Resolve both models, describe them, gather the deep facts unless `options.deep` is off, run the
    selected rules and build the report. Raises a DFlashCompatError on bad input."""
    if rules is None:
        from .rules import ALL_RULES

        rules = ALL_RULES
    chosen = select_rules(rules, req.select, req.ignore)
    from .engine_versions import select_versions

    versions = req.versions if req.versions is not None else select_versions()
    t_res = resolve(req.target, "target", revision=req.revision, token=req.token)
    d_res = resolve(req.draft, "draft", revision=req.draft_revision, token=req.token)
    target, draft = load_target(t_res), load_draft(d_res)
    ctx = CheckContext(target=target, draft=draft, options=req.options, versions=versions)
    if req.options.deep:
        from .probe import inspect_draft, inspect_target

        ctx = CheckContext(target=target, draft=draft, options=req.options,
                           weights=inspect_draft(d_res, token=req.options.token),
                           modules=inspect_target(t_res, target, req.options, req.framework), versions=versions)
    results = check_rules(ctx, chosen, req.backends, severity=req.severity)
    return build_report(target, draft, ctx.modules, ctx.weights, results, strict=req.strict, versions=versions)
