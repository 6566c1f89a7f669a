"""The preflight pipeline: resolve -> describe (specs) -> inspect (deep facts, optional) -> rules -> report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from dflash_compat.checker import BACKENDS, Rule, RuleContext, check_rules, select_rules
from dflash_compat.checker.report import Report, build_report
from dflash_compat.deployment.options import CheckOptions
from dflash_compat.exceptions import ConfigError
from dflash_compat.resolve.refs import Resolved, resolve
from dflash_compat.specs import DraftSpec, TargetSpec, parse_draft_config, parse_target_config

if TYPE_CHECKING:
    from dflash_compat.engines.registry import Versions

__all__ = ["CheckRequest", "build_context", "load_target", "load_draft", "run_check"]


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
    # `check --launch CMD`: the launch line of the deployment (launch.parse.Launch); its rules run too.
    launch: Optional[Any] = None


def _gguf_header(resolved: Resolved, token: Optional[str] = None):
    from dflash_compat.files.gguf_header import read_gguf_header

    if resolved.is_hub:
        from dflash_compat.resolve.hub import read_hub_gguf_header

        return read_hub_gguf_header(resolved.repo_id, resolved.gguf, revision=resolved.revision, token=token)
    return read_gguf_header(resolved.gguf)


def load_gguf_target(resolved: Resolved, token: Optional[str] = None) -> TargetSpec:
    """A GGUF target's spec: its header read (bounded), as the config a checkpoint would hold."""
    from dflash_compat.specs.gguf import TARGET_SOURCES, gguf_info, gguf_target_config, sources_for

    info = gguf_info(_gguf_header(resolved, token))
    spec = parse_target_config(gguf_target_config(info, f"target {resolved.ref}"), resolved.ref,
                               config_file=info.file)
    return spec.model_copy(update={"gguf": info, "sources": {**spec.sources, **sources_for(info, TARGET_SOURCES)}})


def load_gguf_draft(resolved: Resolved, token: Optional[str] = None) -> DraftSpec:
    """A DFlash draft GGUF's spec (layer ids in the z-lab convention: dflash.target_layers - 1)."""
    from dflash_compat.specs.gguf import DRAFT_SOURCES, gguf_draft_config, gguf_info, sources_for

    info = gguf_info(_gguf_header(resolved, token))
    spec = parse_draft_config(gguf_draft_config(info, f"draft {resolved.ref}"), resolved.ref, config_file=info.file)
    return spec.model_copy(update={"gguf": info, "sources": {**spec.sources, **sources_for(info, DRAFT_SOURCES)}})


def load_target(resolved: Resolved, token: Optional[str] = None) -> TargetSpec:
    if resolved.is_gguf:
        return load_gguf_target(resolved, token)
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


def load_draft(resolved: Resolved, token: Optional[str] = None) -> DraftSpec:
    if resolved.is_gguf:
        return load_gguf_draft(resolved, token)
    raw = resolved.json("config.json")
    if raw is None:
        raise ConfigError(f"draft {resolved.ref}: no config.json")
    return parse_draft_config(raw, resolved.ref)


def build_context(req: CheckRequest, versions: Optional["Versions"] = None, **extra) -> tuple[RuleContext, list[str]]:
    """Resolve both models, describe them and gather the deep facts unless `options.deep` is off: the
    context every rule of this run reads, and the backends it judges (GGUF models: llama.cpp only).
    `extra`: more of the context (a launch line and its neighbours). Raises a DFlashCompatError on bad input."""
    if versions is None:
        from dflash_compat.engines.registry import select_versions

        versions = req.versions if req.versions is not None else select_versions()
    t_res = resolve(req.target, "target", revision=req.revision, token=req.token)
    d_res = resolve(req.draft, "draft", revision=req.draft_revision, token=req.token)
    backends = list(req.backends)
    if t_res.is_gguf or d_res.is_gguf:  # only llama.cpp serves GGUF files
        if "llama.cpp" not in backends:
            from dflash_compat.exceptions import InputError

            raise InputError("GGUF models are checked for the llama.cpp backend only; add --backend llama.cpp or "
                             "pass the safetensors checkpoints")
        backends = ["llama.cpp"]
    target, draft = load_target(t_res, req.token), load_draft(d_res, req.token)
    modules = weights = None
    if req.options.deep:
        from dflash_compat.inspection import inspect_draft, inspect_target
        from dflash_compat.modelfacts import Skipped

        gguf = Skipped("gguf", "a GGUF file: its header is read, it is not built as a checkpoint")
        weights = gguf if d_res.is_gguf else inspect_draft(d_res, token=req.options.token)
        modules = gguf if t_res.is_gguf else inspect_target(t_res, target, req.options, req.framework)
    ctx = RuleContext(target=target, draft=draft, options=req.options, versions=versions, modules=modules,
                      weights=weights, **extra)
    return ctx, backends


def run_check(req: CheckRequest, rules: Optional[Sequence[Rule]] = None) -> Report:
    """Resolve both models, describe them, gather the deep facts unless `options.deep` is off, run the
    selected rules and build the report. Raises a DFlashCompatError on bad input."""
    if rules is None:
        from dflash_compat.rules import ALL_RULES

        rules = ALL_RULES
    chosen = select_rules(rules, req.select, req.ignore)
    ctx, backends = build_context(req, launch=req.launch) if req.launch is not None else build_context(req)
    results = check_rules(ctx, chosen, backends, severity=req.severity)
    return build_report(ctx.target, ctx.draft, ctx.modules, ctx.weights, results, strict=req.strict,
                        versions=ctx.versions)
