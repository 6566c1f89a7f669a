"""The deep facts as the JSON report has always written them: nine `target` keys plus `target.deep`,
and `draft.weights`. Report schema version 1 fixes these key names, their values and their order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

if TYPE_CHECKING:  # a config-only report (no facts) is written without loading the fact classes
    from dflash_compat.modelfacts.modules import (
        CacheFacts,
        ForwardFacts,
        LayerReturns,
        MlxCache,
        ModuleFacts,
        ModulePaths,
        Scaling,
    )
    from dflash_compat.modelfacts.skipped import Skipped
    from dflash_compat.modelfacts.weights import DraftWeights

__all__ = ["module_fields", "weights_field"]

def weights_field(weights: Optional[Union[DraftWeights, Skipped]]) -> Optional[dict[str, Any]]:
    """`draft.weights`: None when the headers were not looked for."""
    if weights is None:
        return None
    from dflash_compat.modelfacts.skipped import (
        Skipped,  # here, not at the top: a config-only report has no facts (start-up)
    )

    if isinstance(weights, Skipped):
        return {"checked": False, "files": [], "tensor_count": 0, "dtype": None, "dtypes": [],
                "skipped": weights.reason, "incomplete": {}, "metadata": {}}
    return {
        "checked": True,
        "files": list(weights.files),
        "tensor_count": weights.tensor_count,
        "dtype": weights.dtype,
        "dtypes": list(weights.dtypes),
        "skipped": None,
        "incomplete": {name: list(sizes) for name, sizes in weights.incomplete.items()},
        "metadata": dict(weights.metadata),
    }


def module_fields(modules: Optional[Union[ModuleFacts, Skipped]]) -> dict[str, Any]:
    """The report's module keys of `target`: embed_path ... layer_returns, then `deep`."""
    if modules is not None:  # a config-only report has no facts: Skipped loads only with them (start-up)
        from dflash_compat.modelfacts.skipped import Skipped
    m = None if modules is None or isinstance(modules, Skipped) else modules
    paths, cache = (m.paths, m.cache) if m else (None, None)
    forward, returns = (m.forward, m.layer_returns) if m else (None, None)
    fields: dict[str, Any] = {
        "embed_path": paths.embed if paths else None,
        "lm_head_path": paths.head if paths else None,
        "layers_path": paths.layers if paths else None,
        "tied_embeddings": paths.tied if paths else None,
        "cache_layers": list(cache.layers) if cache and cache.layers is not None else None,
        "rollback": cache.rollback if cache else None,
        "forward_accepts": list(forward.accepts) if forward else None,
        "layer_returns": returns.kind if returns else None,
    }
    if modules is not None and isinstance(modules, Skipped):
        deep = {"inspected": False, "framework": modules.framework, "skipped": modules.reason,
                "detail": modules.detail}
    elif m is None:
        deep = {}
    elif m.framework == "mlx":
        deep = _mlx_deep(m)
    else:
        deep = _torch_deep(m)
    return dict(fields, deep=deep)


# --- transformers -------------------------------------------------------------------------------------------


def _torch_deep(m: ModuleFacts) -> dict[str, Any]:
    deep: dict[str, Any] = {
        "inspected": m.skipped is None,
        "framework": "torch",
        "transformers_version": m.transformers_version,
        "model_class": m.model_class,
        "auto_class": m.auto_class,
    }
    if m.adapter:
        deep["adapter"] = m.adapter
    if m.auto_map_not_imported:
        deep["remote_code"] = "not-imported-built-in-class-used"
    steps = (("locate", m.paths, _paths), ("embedding_and_logit_facts", m.scaling, _scaling),
             ("forward_facts", m.forward, _forward), ("layer_return_facts", m.layer_returns, _returns),
             ("cache_facts", m.cache, lambda c: _cache(c, m.forward)))
    for step, group, keys in steps:
        if group is not None:
            deep.update(keys(group))
        elif step in m.fact_errors and "fact_errors" not in deep:
            deep["fact_errors"] = dict(m.fact_errors)  # where the first failing step would have written
    if "fact_errors" not in deep and m.fact_errors:
        deep["fact_errors"] = dict(m.fact_errors)
    if m.skipped is not None:
        deep.update(skipped=m.skipped.reason, detail=m.skipped.detail)
    deep["crop_semantics"] = m.crop_semantics
    return deep


def _paths(p: ModulePaths) -> dict[str, Any]:
    out = {
        "embed_via": p.embed_via, "embed_class": p.embed_class, "lm_head_via": p.head_via,
        "lm_head_class": p.head_class, "embed_width": p.embed_width, "head_takes_hidden": p.head_takes_hidden,
        "decoder_path": p.decoder, "layers_via": p.layers_via,
    }
    if p.layers is not None:
        out.update(layers_len=p.layers_len, layer_classes=list(p.layer_classes))
    out.update(config_layers=p.config_layers, norm_path=p.norm, has_model_embed_tokens=p.has_model_embed_tokens,
               has_lm_head_attr=p.has_lm_head_attr)
    return out


def _scaling(s: Scaling) -> dict[str, Any]:
    return {"embed_scale": s.embed_scale, "embed_scaled": s.embed_scaled,
            "embed_scale_source": list(s.embed_scale_source), "logit_softcap": s.logit_softcap,
            "logits_scaling": s.logits_scaling}


def _forward(f: ForwardFacts) -> dict[str, Any]:
    return {
        "forward_params": list(f.params),
        "forward_accepts_how": dict(f.how),
        "deprecated_kwargs": {k: {"new_name": a.new_name, "removed_in": a.removed_in, "removed": a.removed}
                              for k, a in f.deprecated_kwargs.items()},
        "cache_arg": f.cache_arg,
        "output_class": f.output_class,
        "output_fields": list(f.output_fields),
        "output_has_hidden_states": f.output_has_hidden_states,
        "output_has_logits": f.output_has_logits,
    }


def _returns(r: LayerReturns) -> dict[str, Any]:
    return {"layer_returns_by_class": dict(r.by_class)}


def _cache(c: CacheFacts, forward: Optional[ForwardFacts]) -> dict[str, Any]:
    if c.model_managed:
        out: dict[str, Any] = {"cache_class": c.cache_class}
        if forward is None or not forward.cache_arg:
            out["cache_arg"] = "state"  # such models take their state object as `state`
        out["non_croppable_layers"] = list(c.non_croppable)
        return out
    if c.error is not None:
        return {"cache_class": c.cache_class, "cache_error": c.error}
    return {
        "cache_class": c.cache_class, "non_croppable_layers": list(c.non_croppable), "sliding_layers": list(c.sliding),
        "conv_state_layers": list(c.conv_state), "past_recording": c.past_recording,
        "sliding_window": c.sliding_window,
    }


# --- mlx-lm -------------------------------------------------------------------------------------------------


def _mlx_deep(m: ModuleFacts) -> dict[str, Any]:
    from dflash_compat.modelfacts.modules import LayerReturns, ModulePaths, Scaling

    x = m.mlx
    if x is None or not x.supported:
        error = {"supported": False, "error": x.error if x else None, "model_type": x.model_type if x else None,
                 "mlx_lm_version": x.mlx_lm_version if x else None}
        return {"inspected": True, "framework": "mlx", "mlx": error}
    p = m.paths or ModulePaths()
    s = m.scaling or Scaling()
    r = m.layer_returns or LayerReturns()
    facts: dict[str, Any] = {
        "supported": True, "mlx_lm_version": x.mlx_lm_version, "module": x.module, "model_class": m.model_class,
        "quantization": dict(x.quantization) if x.quantization is not None else None,
        "reference_paths": {"embed": x.reference_paths.embed, "head": x.reference_paths.head,
                            "layers": x.reference_paths.layers},
        "paths": {"embed": p.embed, "head": p.head, "layers": p.layers},
        "norm_path": p.norm, "tied": p.tied, "embed_class": p.embed_class, "head_class": p.head_class,
        "quantized": {"embed": x.embed_quantized, "head": x.head_quantized},
        "num_layers": p.layers_len, "layer_classes": list(p.layer_classes),
        "layer_returns_by_class": dict(r.by_class), "layer_returns": r.kind,
        "embed_scale": s.embed_scale,
        "embed_scale_source": s.embed_scale_source[0] if s.embed_scale_source else None,
        "gdn_normalize_qk": x.gdn_normalize_qk,
        "forward_accepts": list(m.forward.accepts) if m.forward else [],
        "make_cache": x.make_cache, "caches": [_mlx_cache(c) for c in x.caches],
        "reference_rollback": x.reference_rollback, "runtime_rollback": x.runtime_rollback,
    }
    if m.adapter:
        facts["adapter"] = m.adapter
    facts.update(model_type=x.model_type, weights_read=x.weights_read)
    return {
        "inspected": True, "framework": "mlx", "mlx": facts, "model_class": m.model_class,
        "layers_len": p.layers_len, "layer_classes": list(p.layer_classes),
        "layer_returns_by_class": dict(r.by_class), "embed_class": p.embed_class, "norm_path": p.norm,
        "embed_scaled": s.embed_scaled, "embed_scale": s.embed_scale,
        "embed_scale_source": list(s.embed_scale_source),
    }


def _mlx_cache(c: MlxCache) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": c.kind}
    if c.window is not None:
        out.update(window=c.window, keep=c.keep)
    if c.parts is not None:
        out["parts"] = [_mlx_cache(p) for p in c.parts]
    out["trimmable"] = c.trimmable
    if c.layer is not None:
        out["layer"] = c.layer
    if c.module is not None:
        out["module"] = c.module
    return out
