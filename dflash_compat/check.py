"""The preflight pipeline: resolve -> describe (specs) -> inspect (optional deep facts) -> rules -> report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from .engine import BACKENDS, CheckContext, CheckOptions, Rule, run_rules, select_rules
from .exceptions import ConfigError
from .report import Report, summarize
from .resolve import Resolved, resolve
from .specs import DraftSpec, TargetSpec, parse_draft_config, parse_target_config

__all__ = ["CheckRequest", "load_target", "load_draft", "build_report", "run_check"]

# A deep inspector fills module-tree / weight facts into the specs in place. It is looked up
# lazily so that config-only checks never import torch or mlx.
DeepInspector = Callable[[Resolved, TargetSpec, Resolved, DraftSpec, CheckOptions, "list[str]"], None]


@dataclass
class CheckRequest:
    target: str
    draft: str
    backends: Sequence[str] = BACKENDS
    select: Sequence[str] = ()
    ignore: Sequence[str] = ()
    options: CheckOptions = field(default_factory=CheckOptions)
    revision: Optional[str] = None
    draft_revision: Optional[str] = None
    token: Optional[str] = None
    framework: str = "auto"


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


def build_report(ctx: CheckContext, rules: Sequence[Rule], backends: Sequence[str]) -> Report:
    findings = run_rules(ctx, rules, backends)
    return Report(
        target=ctx.target.model_dump(mode="json", exclude={"sources"}),
        draft=ctx.draft.model_dump(mode="json", exclude={"sources"}),
        backends=list(backends),
        findings=findings,
        summary=summarize(findings, list(backends)),
    )


def run_check(
    req: CheckRequest,
    rules: Optional[Sequence[Rule]] = None,
    deep: Optional[DeepInspector] = None,
) -> Report:
    if rules is None:
        from .rules import ALL_RULES

        rules = ALL_RULES
    t_res = resolve(req.target, "target", revision=req.revision, token=req.token)
    d_res = resolve(req.draft, "draft", revision=req.draft_revision, token=req.token)
    target = load_target(t_res)
    draft = load_draft(d_res)
    ctx = CheckContext(target=target, draft=draft, options=req.options)
    if req.options.deep and deep is not None:
        deep(t_res, target, d_res, draft, req.options, ctx.notes)
    chosen = select_rules(rules, req.select, req.ignore)
    return build_report(ctx, chosen, req.backends)
