"""`DraftSpec`: what a DFlash draft's config.json says, in any of the known checkpoint formats."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from ..exceptions import NotADraftError
from ._reader import ConfigReader
from .common import Number, RopeInfo, SizeInt, read_rope, validate_spec

__all__ = ["DraftSpec", "DraftFormat", "build_target_layer_ids", "parse_draft_config"]

DraftFormat = Literal["zlab-v1", "zlab-v2", "speculators"]

ZLAB_V1_ARCHS = ("DFlashDraftModel",)
ZLAB_V2_ARCHS = ("DFlash2DraftModel",)
SPECULATORS_ARCHS = ("DFlashSpeculator",)


def build_target_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """The reference runtime's guess when a checkpoint gives no ids (one layer: the middle one;
    otherwise evenly spaced from 1 to N-3)."""
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    return [round(start + i * (end - start) / (num_draft_layers - 1)) for i in range(num_draft_layers)]


class DraftSpec(BaseModel):
    """The draft side of the contract. `sources` maps each field to the config key it came from."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="Local folder or Hub repo id the draft was resolved from.")
    config_file: str = "config.json"
    format: DraftFormat
    architectures: list[str] = Field(default_factory=list)
    model_type: Optional[str] = None

    hidden_size: SizeInt
    num_hidden_layers: SizeInt
    num_attention_heads: Optional[SizeInt] = None
    num_key_value_heads: Optional[SizeInt] = None
    head_dim: Optional[SizeInt] = None
    intermediate_size: Optional[SizeInt] = None
    vocab_size: Optional[SizeInt] = None
    rms_norm_eps: Optional[Number] = None
    max_position_embeddings: Optional[SizeInt] = None
    hidden_act: Optional[str] = None
    attention_bias: Optional[StrictBool] = None
    torch_dtype: Optional[str] = None

    rope: RopeInfo = Field(default_factory=RopeInfo)

    block_size: Optional[StrictInt] = Field(None, description="Block length including the anchor token.")
    block_size_locations: dict[str, Any] = Field(
        default_factory=dict, description="Every key that sets a block size, with its value."
    )
    num_target_layers: Optional[StrictInt] = None
    target_layer_ids: Optional[list[Any]] = Field(
        None, description="Target decoder-layer indices (z-lab convention: feature = output of layer id)."
    )
    target_layer_ids_guessed: bool = Field(
        False, description="True when no ids were given and the reference formula was applied."
    )
    mask_token_id: Optional[StrictInt] = None
    mask_token_id_locations: dict[str, Any] = Field(default_factory=dict)

    layer_types: Optional[list[Any]] = None
    sliding_window: Optional[StrictInt] = None
    is_causal: Optional[StrictBool] = None

    input_embedding_scale: Optional[Number] = None
    output_multiplier: Optional[Number] = None
    final_logit_softcapping: Optional[Number] = None

    # DFlash 2
    conv_kernel_size: Optional[StrictInt] = None
    conv_group_size: Optional[StrictInt] = None
    selector_rank: Optional[StrictInt] = None
    selector_top_k: Optional[StrictInt] = None

    # other engines' extras
    use_aux_hidden_state: Optional[StrictBool] = None
    sample_from_anchor: Optional[StrictBool] = None
    eagle_aux_hidden_state_layer_ids: Optional[list[Any]] = None

    # speculators format
    speculative_tokens: Optional[StrictInt] = None
    draft_vocab_size: Optional[StrictInt] = None
    target_hidden_size: Optional[StrictInt] = None
    verifier_name_or_path: Optional[str] = None
    verifier_architectures: Optional[list[str]] = None

    quantization_config: Optional[dict[str, Any]] = None

    sources: dict[str, str] = Field(default_factory=dict, description="Field name -> dotted config key.")
    raw: dict[str, Any] = Field(default_factory=dict, exclude=True, repr=False)

    @property
    def uses_causal_attention(self) -> bool:
        return bool(self.is_causal)

    def key(self, field: str, default: Optional[str] = None) -> str:
        """The dotted config key a field was read from (or the natural key if it was absent)."""
        return self.sources.get(field, default or field)


def detect_format(raw: dict[str, Any]) -> Optional[DraftFormat]:
    archs = raw.get("architectures") or []
    archs = [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []
    if raw.get("speculators_model_type") == "dflash" or any(a in SPECULATORS_ARCHS for a in archs):
        return "speculators"
    dflash = raw.get("dflash_config") if isinstance(raw.get("dflash_config"), dict) else {}
    if any(a in ZLAB_V2_ARCHS for a in archs) or any(
        k in dflash for k in ("conv_kernel_size", "selector_rank")
    ):
        return "zlab-v2"
    if any(a in ZLAB_V1_ARCHS or a.startswith("DFlash") for a in archs) or dflash:
        return "zlab-v1"
    return None


def parse_draft_config(raw: Any, source: str, config_file: str = "config.json") -> DraftSpec:
    """Build a DraftSpec from a parsed config.json; raises NotADraftError / ConfigError."""
    if not isinstance(raw, dict):
        raise NotADraftError(f"draft {source}: {config_file} is not a JSON object")
    fmt = detect_format(raw)
    if fmt is None:
        archs = raw.get("architectures")
        raise NotADraftError(
            f"draft {source}: {config_file} describes no DFlash draft (architectures={archs!r}, "
            "no dflash_config); pass a DFlash draft checkpoint with --draft"
        )
    if fmt == "speculators":
        return _parse_speculators(raw, source, config_file)
    return _parse_zlab(raw, source, config_file, fmt)


def _read_transformer_fields(r: ConfigReader) -> None:
    for field, keys in {
        "hidden_size": ("hidden_size",),
        "num_hidden_layers": ("num_hidden_layers",),
        "num_attention_heads": ("num_attention_heads",),
        "num_key_value_heads": ("num_key_value_heads",),
        "head_dim": ("head_dim",),
        "intermediate_size": ("intermediate_size",),
        "vocab_size": ("vocab_size",),
        "rms_norm_eps": ("rms_norm_eps",),
        "max_position_embeddings": ("max_position_embeddings",),
        "hidden_act": ("hidden_act",),
        "attention_bias": ("attention_bias",),
        "layer_types": ("layer_types",),
        "sliding_window": ("sliding_window",),
        "model_type": ("model_type",),
    }.items():
        r.take(field, *keys)
    r.take("torch_dtype", "dtype", "torch_dtype")
    r.take("quantization_config", "quantization_config")


def _parse_zlab(raw: dict[str, Any], source: str, config_file: str, fmt: DraftFormat) -> DraftSpec:
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
    values = dict(r.values)
    _guess_ids(values, r.sources)
    return validate_spec(
        DraftSpec,
        dict(
            values,
            source=source,
            config_file=config_file,
            format=fmt,
            rope=rope,
            block_size_locations=blocks,
            mask_token_id_locations=masks,
            sources=r.sources,
            raw=raw,
        ),
        r.sources,
        f"draft {source}: {config_file}",
    )


def _guess_ids(values: dict[str, Any], sources: dict[str, str]) -> None:
    n_target, n_draft = values.get("num_target_layers"), values.get("num_hidden_layers")
    if values.get("target_layer_ids") is None and isinstance(n_target, int) and isinstance(n_draft, int):
        if n_target > 0 and n_draft > 0 and not isinstance(n_target, bool):
            values["target_layer_ids"] = build_target_layer_ids(n_target, n_draft)
            values["target_layer_ids_guessed"] = True
            sources["target_layer_ids"] = "num_target_layers"


def _parse_speculators(raw: dict[str, Any], source: str, config_file: str) -> DraftSpec:
    r = ConfigReader(raw, prefix="transformer_layer_config")
    r.set("architectures", raw.get("architectures") or [], "architectures")
    _read_transformer_fields(r)
    rope = read_rope(r)
    # Top-level speculators keys.
    r.take("mask_token_id", "mask_token_id", absolute=True)
    masks = r.all_present("mask_token_id", absolute=True)
    blocks = r.all_present("block_size", absolute=True)
    r.take("block_size", "block_size", absolute=True)
    r.take("draft_vocab_size", "draft_vocab_size", absolute=True)
    r.take("target_hidden_size", "target_hidden_size", absolute=True)
    r.take("verifier_name_or_path", "speculators_config.verifier.name_or_path", absolute=True)
    r.take("verifier_architectures", "speculators_config.verifier.architectures", absolute=True)
    methods = raw.get("speculators_config", {}).get("proposal_methods") if isinstance(
        raw.get("speculators_config"), dict
    ) else None
    if isinstance(methods, list) and methods and isinstance(methods[0], dict):
        if methods[0].get("speculative_tokens") is not None:
            r.set(
                "speculative_tokens",
                methods[0]["speculative_tokens"],
                "speculators_config.proposal_methods.0.speculative_tokens",
            )
    aux = r.take("target_layer_ids", "aux_hidden_state_layer_ids", absolute=True)
    if isinstance(aux, list):
        # speculators counts HF hidden_states (embedding = 0); z-lab counts decoder layers.
        r.values["target_layer_ids"] = [
            i - 1 if isinstance(i, int) and not isinstance(i, bool) else i for i in aux
        ]
    r.take("num_target_layers", "num_target_layers", absolute=True)
    # Some speculators configs keep these next to, not inside, transformer_layer_config.
    for field in ("layer_types", "sliding_window", "quantization_config"):
        if field not in r.values:
            r.take(field, field, absolute=True)
    values = dict(r.values)
    _guess_ids(values, r.sources)
    return validate_spec(
        DraftSpec,
        dict(
            values,
            source=source,
            config_file=config_file,
            format="speculators",
            rope=rope,
            block_size_locations=blocks,
            mask_token_id_locations=masks,
            sources=r.sources,
            raw=raw,
        ),
        r.sources,
        f"draft {source}: {config_file}",
    )
