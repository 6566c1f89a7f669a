"""Target module-tree facts from transformers, built on the meta device: no weights, no download beyond JSON.

`inspect_torch_target` returns where the embedding, output head and decoder layers live, the forward
signature, which cache layers the model builds and whether cropping rolls them back, what a decoder
layer returns (`ModuleFacts`), or why it could not build the model (`Skipped`). The steps live in
torch_build / torch_locate / torch_forward / torch_cache; torch and transformers are imported lazily.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Union

from dflash_compat.deployment.options import CheckOptions
from dflash_compat.exceptions import error_line
from dflash_compat.inspection.torch_build import build, is_native, quiet
from dflash_compat.inspection.torch_cache import cache_facts, crop_semantics
from dflash_compat.inspection.torch_forward import forward_facts, layer_return_facts
from dflash_compat.inspection.torch_locate import locate, scaling_facts, strip_wrapper_prefix
from dflash_compat.modelfacts import ModuleFacts, Skipped
from dflash_compat.resolve.refs import Resolved
from dflash_compat.specs import TargetSpec

__all__ = ["inspect_torch_target"]


def _skip(reason: str, detail: str) -> Skipped:
    return Skipped(reason, detail, framework="torch")


def inspect_torch_target(resolved: Resolved, target: TargetSpec,
                         options: CheckOptions) -> Union[ModuleFacts, Skipped]:
    """Build the target on the meta device and read its module facts."""
    try:
        import torch  # noqa: F401
        import transformers
    except ImportError as exc:
        return _skip("torch-missing", f"{exc.name or 'torch'} is not installed (pip install 'dflash-compat[torch]')")
    remote = target.needs_remote_code and options.trust_remote_code
    if target.needs_remote_code and not remote and not is_native(target):
        classes = ", ".join(sorted(target.auto_map or {}))
        return _skip("remote-code", f"the config's auto_map needs the repo's own Python code ({classes}); "
                     "rerun with --trust-remote-code to inspect it")
    with quiet():
        built = build(resolved, target, remote)
        if isinstance(built, Skipped):
            return built
        model = built.model
        if options.adapter:  # --adapter: the module rules see the adapted model
            from dflash_compat.adapters.loading import check_wrapper

            wrap = check_wrapper(options.adapter, "torch")
            model = wrap(model) if wrap is not None else model
        facts = ModuleFacts(
            framework="torch", model_class=built.model_class, adapter=options.adapter,
            transformers_version=transformers.__version__, auto_class=built.auto_class,
        )
        if target.needs_remote_code and not remote:
            # What transformers itself does without trust_remote_code: its built-in class for this model_type.
            facts = dataclasses.replace(facts, auto_map_not_imported=True, notes=(
                f"auto_map not imported: inspected transformers' built-in {built.model_class}",))
        facts = _read_tree(model, target, facts)
        return dataclasses.replace(facts, crop_semantics=crop_semantics())


def _read_tree(model: Any, target: TargetSpec, facts: ModuleFacts) -> ModuleFacts:
    """Run each fact step; one that fails on an odd model is recorded in `fact_errors` and costs only
    its own facts. Without the paths (the first step) no module rule can judge the model."""
    errors: dict[str, str] = {}

    def attempt(step: str, fn: Callable[..., Any], *args: Any) -> Optional[Any]:
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - our inspector's failure on this model, reported by DF006
            errors[step] = error_line(exc)
            return None

    paths = attempt("locate", locate, model, target)
    if paths is None:
        detail = f"locating the modules failed ({errors['locate']})"
        return dataclasses.replace(facts, fact_errors=errors, skipped=_skip("inspection-failed", detail),
                                   notes=(*facts.notes, f"module checks skipped (inspection-failed): {detail}"))
    scaling = attempt("embedding_and_logit_facts", scaling_facts, model, paths)
    forward = attempt("forward_facts", forward_facts, model)
    returns = attempt("layer_return_facts", layer_return_facts, model, paths)
    cache = attempt("cache_facts", cache_facts, model, paths)
    if facts.adapter:
        paths = strip_wrapper_prefix(paths)
    return dataclasses.replace(facts, paths=paths, scaling=scaling, forward=forward, layer_returns=returns,
                               cache=cache, fact_errors=errors)
