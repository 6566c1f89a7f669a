"""Reading each draft family's config.json into a DraftSpec: the z-lab key layout (with the families
built on it) and the speculators layout. Every value keeps the dotted key it came from."""

from __future__ import annotations

from typing import Any

from dflash_compat.exceptions import NotADraftError
from dflash_compat.specs._reader import MISSING, ConfigReader, get_dotted
from dflash_compat.specs.common import read_rope, validate_spec
from dflash_compat.specs.draft import FAMILY_SETTINGS, DraftSpec, build_target_layer_ids
from dflash_compat.specs.families import FAMILIES, detect_format, not_a_dflash_draft

__all__ = ["parse_any", "parse_draft_config", "FAMILY_DEFAULTS", "FAMILY_KEYS"]

_MG = "transformers 5.24.0 models/muse_glimmer_assistant/configuration_muse_glimmer_assistant.py"
_MG_LOADERS = "; vLLM and SGLang read the draft config through this class too"
_XP = "vLLM 0.33.0 vllm/model_executor/models/qwen3_xpress.py:258-263"

# Values a family's config may leave out: (field, value or None for "the target's", origin, who and where).
FAMILY_DEFAULTS: dict[str, tuple[tuple[str, Any, str, str], ...]] = {
    "muse-glimmer-assistant": (
        ("block_size", 16, "default", f"MuseGlimmerAssistantConfig default ({_MG}:81){_MG_LOADERS}"),
        ("mask_token_id", 201818, "default", f"MuseGlimmerAssistantConfig default ({_MG}:82){_MG_LOADERS}"),
        ("target_layer_ids", [1, 13, 25, 37, 49], "default",
         f"MuseGlimmerAssistantConfig default ({_MG}:88-89){_MG_LOADERS}"),
        ("vocab_size", None, "target",
         "the config class has no vocab_size: transformers and SGLang embed and project with the target's "
         "modules; vLLM 0.33.0 fills 202048, the Muse Glimmer vocabulary (vllm/config/speculative.py:1159-1166)"),
    ),
    "qwen3-xpress": (
        ("xpress_block_size", 16, "default", f"num_speculative_steps + 1, else 16 ({_XP})"),
        ("xpress_rank", 256, "default", f"refiner rank ({_XP})"),
        ("xpress_mlp_hidden", 512, "default", f"refiner MLP width ({_XP})"),
    ),
}

# Family-specific settings: settings field -> the config keys it is read from, first present wins
# (typed in specs/draft.py, FAMILY_SETTINGS).
_LILICORR = ("enabled", "hidden_size", "candidate_topk", "num_heads", "mlp_ratio", "factor_dim", "vector_eps",
             "logit_scale", "num_layers")
_SPECULATORS = {"sliding_window_non_causal": ("sliding_window_non_causal",)}
FAMILY_KEYS: dict[str, dict[str, tuple[str, ...]]] = {
    "qwen3-xpress": {"block_size": ("xpress_block_size",), "num_speculative_steps": ("num_speculative_steps",),
                     "rank": ("xpress_rank",), "mlp_hidden": ("xpress_mlp_hidden",), "topc": ("xpress_topc",),
                     "num_passes": ("xpress_num_passes",)},
    "lilicorr": {k: (f"dflash_config.lilicorr_{k}",) for k in _LILICORR},
    "domino": {k: (f"dflash_config.{k}", k) for k in ("gru_hidden_dim", "emb_dim", "shift_label",
                                                       "pure_draft_prefix_len")},
    "speculators": _SPECULATORS,
    "speculators-dflash2": _SPECULATORS,
}


def parse_any(raw: Any, source: str, config_file: str = "config.json") -> DraftSpec:
    """Build a DraftSpec from a parsed config.json; raises NotADraftError / ConfigError."""
    if not isinstance(raw, dict):
        raise NotADraftError(f"draft {source}: {config_file} is not a JSON object")
    fmt = detect_format(raw, f"draft {source}: {config_file}")
    if fmt is None:
        archs = raw.get("architectures")
        what = not_a_dflash_draft(raw)
        seen = f"describes no DFlash draft: it looks like {what}" if what else "describes no DFlash draft"
        raise NotADraftError(
            f"draft {source}: {config_file} {seen} (architectures={archs!r}, no dflash_config); "
            "pass a DFlash draft checkpoint with --draft"
        )
    if FAMILIES[fmt].layout == "speculators":
        r, extra = _read_speculators(raw)
    else:
        r, extra = _read_zlab(raw, fmt)
    return _build(r, raw, fmt, source, config_file, extra)


parse_draft_config = parse_any  # the public name (dflash_compat.specs.parse_draft_config)


def _read_transformer_fields(r: ConfigReader) -> None:
    for field in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                  "intermediate_size", "vocab_size", "rms_norm_eps", "max_position_embeddings", "hidden_act",
                  "attention_bias", "layer_types", "sliding_window", "model_type"):
        r.take(field, field)
    r.take("torch_dtype", "dtype", "torch_dtype")
    r.take("quantization_config", "quantization_config")


def _read_zlab(raw: dict[str, Any], fmt: str) -> tuple[ConfigReader, dict[str, Any]]:
    """The z-lab layout: dflash_config first, then the top level (every engine falls back to it)."""
    r = ConfigReader(raw)
    r.set("architectures", raw.get("architectures") or [], "architectures")
    _read_transformer_fields(r)
    rope = read_rope(r)
    r.take("num_target_layers", "num_target_layers", "dflash_config.num_target_layers")
    blocks = r.all_present("dflash_config.block_size", "block_size")
    r.take("block_size", "dflash_config.block_size", "block_size")
    masks = r.all_present("dflash_config.mask_token_id", "mask_token_id")
    r.take("mask_token_id", "dflash_config.mask_token_id", "mask_token_id")
    r.take("target_layer_ids", "dflash_config.target_layer_ids", "target_layer_ids")
    r.take("is_causal", "is_causal", "dflash_config.causal", "dflash_config.is_causal")
    for name in ("input_embedding_scale", "output_multiplier"):
        r.take(name, f"dflash_config.{name}", name)
    r.take("final_logit_softcapping", "dflash_config.final_logit_softcapping", "final_logit_softcapping")
    for name in ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k"):
        r.take(name, f"dflash_config.{name}", name)
    for name in ("use_aux_hidden_state", "sample_from_anchor"):
        r.take(name, f"dflash_config.{name}", name)
    r.take(
        "eagle_aux_hidden_state_layer_ids",
        "eagle_aux_hidden_state_layer_ids",
        "eagle_config.eagle_aux_hidden_state_layer_ids",
        "dflash_config.eagle_aux_hidden_state_layer_ids",
    )
    r.take("projector_type", "dflash_config.projector_type", "projector_type")
    return r, {"rope": rope, "block_size_locations": blocks, "mask_token_id_locations": masks}


def _read_speculators(raw: dict[str, Any]) -> tuple[ConfigReader, dict[str, Any]]:
    """speculators: the draft's own transformer config nested, the DFlash keys at the top level."""
    r = ConfigReader(raw, prefix="transformer_layer_config")
    r.set("architectures", raw.get("architectures") or [], "architectures")
    _read_transformer_fields(r)
    rope = read_rope(r)
    r.take("mask_token_id", "mask_token_id", absolute=True)
    masks = r.all_present("mask_token_id", absolute=True)
    blocks = r.all_present("block_size", absolute=True)
    for name in ("block_size", "draft_vocab_size", "target_hidden_size", "sample_from_anchor",
                 "conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k"):
        r.take(name, name, absolute=True)
    r.take("verifier_name_or_path", "speculators_config.verifier.name_or_path", absolute=True)
    r.take("verifier_architectures", "speculators_config.verifier.architectures", absolute=True)
    methods = raw.get("speculators_config", {}).get("proposal_methods") if isinstance(
        raw.get("speculators_config"), dict
    ) else None
    if isinstance(methods, list) and methods and isinstance(methods[0], dict):
        if methods[0].get("speculative_tokens") is not None:
            r.set("speculative_tokens", methods[0]["speculative_tokens"],
                  "speculators_config.proposal_methods.0.speculative_tokens")
    aux = r.take("target_layer_ids", "aux_hidden_state_layer_ids", absolute=True)
    if isinstance(aux, list):
        # speculators counts HF hidden_states (embedding = 0); z-lab counts decoder layers.
        r.values["target_layer_ids"] = [i - 1 if isinstance(i, int) and not isinstance(i, bool) else i for i in aux]
    r.take("num_target_layers", "num_target_layers", absolute=True)
    # Some speculators configs keep these next to, not inside, transformer_layer_config.
    for field in ("layer_types", "sliding_window", "quantization_config"):
        if field not in r.values:
            r.take(field, field, absolute=True)
    return r, {"rope": rope, "block_size_locations": blocks, "mask_token_id_locations": masks}


def _build(r: ConfigReader, raw: dict[str, Any], fmt: str, source: str, config_file: str,
           extra: dict[str, Any]) -> DraftSpec:
    values = dict(r.values)
    inherited = _apply_defaults(fmt, raw, values, r.sources)
    _guess_ids(values, r.sources)
    settings = _family_settings(fmt, raw, r.sources)
    return validate_spec(
        DraftSpec,
        dict(values, source=source, config_file=config_file, format=fmt, family=FAMILIES[fmt].title,
             inherited=inherited, sources=r.sources, raw=raw, **settings, **extra),
        r.sources,
        f"draft {source}: {config_file}",
    )


def _family_settings(fmt: str, raw: dict[str, Any], sources: dict[str, str]) -> dict[str, Any]:
    """{group: {field: value}} for the family's own settings (FAMILY_KEYS), each value's key recorded in
    `sources` as "<group>.<field>"; {} for a family without any."""
    if fmt not in FAMILY_SETTINGS:
        return {}
    group, _ = FAMILY_SETTINGS[fmt]
    found = {}
    for name, keys in FAMILY_KEYS[fmt].items():
        for key in keys:
            value = get_dotted(raw, key)
            if value is not MISSING and value is not None:
                found[name] = value
                sources[f"{group}.{name}"] = key
                break
    return {group: found}


def _apply_defaults(fmt: str, raw: dict[str, Any], values: dict[str, Any],
                    sources: dict[str, str]) -> list[dict[str, Any]]:
    """Fill the family's documented defaults for absent values; record each (with who applies it)."""
    out = []
    for field, value, origin, detail in FAMILY_DEFAULTS.get(fmt, ()):
        if values.get(field) is not None or raw.get(field) is not None:
            continue
        if field == "xpress_block_size" and isinstance(raw.get("num_speculative_steps"), int):
            continue  # vLLM then uses num_speculative_steps + 1
        if value is not None and field in DraftSpec.model_fields:
            values[field] = value
            sources[field] = field  # the key the engines would read, absent from this file
        out.append({"field": field, "value": value, "origin": origin, "detail": detail})
    return out


def _guess_ids(values: dict[str, Any], sources: dict[str, str]) -> None:
    n_target, n_draft = values.get("num_target_layers"), values.get("num_hidden_layers")
    if values.get("target_layer_ids") is None and isinstance(n_target, int) and isinstance(n_draft, int):
        if n_target > 0 and n_draft > 0 and not isinstance(n_target, bool):
            values["target_layer_ids"] = build_target_layer_ids(n_target, n_draft)
            values["target_layer_ids_guessed"] = True
            sources["target_layer_ids"] = "num_target_layers"
