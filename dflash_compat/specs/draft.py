"""`DraftSpec`: what a DFlash draft's config.json says, in any of the known draft families."""

# No `from __future__ import annotations` here: pydantic would compile and evaluate every field's
# annotation string when it builds the models (about 3 ms of every check's start-up).
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from dflash_compat.specs.common import Number, RopeInfo, SizeInt, new_list
from dflash_compat.specs.families import FAMILIES, SPECULATORS_FORMATS, DraftFormat
from dflash_compat.specs.gguf import GGUFInfo

__all__ = ["DraftSpec", "DraftFormat", "InheritedValue", "build_target_layer_ids", "XPressSettings",
           "LiLiCorrSettings", "DominoSettings", "SpeculatorsSettings", "FAMILY_SETTINGS"]


def build_target_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """The reference runtime's guess when a checkpoint gives no ids (one layer: the middle one;
    otherwise evenly spaced from 1 to N-3)."""
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    return [round(start + i * (end - start) / (num_draft_layers - 1)) for i in range(num_draft_layers)]


class InheritedValue(BaseModel):
    """A value the draft's config leaves out, and where the engines take it from instead."""

    # defer_build: its validator is built on first use, not at import (start-up; DraftSpec's own
    # schema embeds it either way)
    model_config = ConfigDict(extra="forbid", defer_build=True)

    field: str = Field(description="The spec field (vocab_size, block_size, ...).")
    value: Any = Field(None, description="The value the engines use; None when it is the target's own.")
    origin: str = Field(description="'target' (taken from the target model) or 'default' (a loader's default).")
    detail: str = Field(description="Which engines do it, with the source location.")


class _FamilySettings(BaseModel):
    # defer_build: each family's validator is built on first use, not at import (start-up; most
    # checks meet one family or none, and DraftSpec's own schema embeds them either way)
    model_config = ConfigDict(extra="forbid", defer_build=True)


class XPressSettings(_FamilySettings):
    """Qwen3-XPress's refiner head (top-level keys; vLLM 0.33.0 vllm/model_executor/models/qwen3_xpress.py:258-263
    reads them, with the defaults in FAMILY_DEFAULTS)."""

    block_size: Optional[StrictInt] = Field(None, description="xpress_block_size")
    num_speculative_steps: Optional[StrictInt] = Field(None, description="num_speculative_steps")
    rank: Optional[StrictInt] = Field(None, description="xpress_rank (default 256)")
    mlp_hidden: Optional[StrictInt] = Field(None, description="xpress_mlp_hidden (default 512)")
    topc: Optional[StrictInt] = Field(None, description="xpress_topc")
    num_passes: Optional[StrictInt] = Field(None, description="xpress_num_passes")


class LiLiCorrSettings(_FamilySettings):
    """LiLiCorr's correlator (`dflash_config.lilicorr_*`)."""

    enabled: Optional[StrictBool] = None
    hidden_size: Optional[StrictInt] = None
    candidate_topk: Optional[StrictInt] = None
    num_heads: Optional[StrictInt] = None
    mlp_ratio: Optional[Number] = None
    factor_dim: Optional[StrictInt] = None
    vector_eps: Optional[Number] = None
    logit_scale: Optional[Number] = None
    num_layers: Optional[StrictInt] = None


class DominoSettings(_FamilySettings):
    """The Domino projector (`dflash_config.X`, else top-level `X`; SGLang srt/models/dflash.py:784-800)."""

    gru_hidden_dim: Optional[StrictInt] = None
    emb_dim: Optional[StrictInt] = None
    # any JSON value: a non-bool is SGLang's own start-up refusal, which DF416 reports with its source
    shift_label: Optional[Any] = None
    pure_draft_prefix_len: Optional[StrictInt] = None


class SpeculatorsSettings(_FamilySettings):
    """What a speculators-format DFlash config adds (top level)."""

    sliding_window_non_causal: Optional[StrictBool] = None


# format -> (DraftSpec field, settings model): the one place a family's own settings are typed
FAMILY_SETTINGS: dict[str, tuple[str, type[_FamilySettings]]] = {
    "qwen3-xpress": ("xpress", XPressSettings),
    "lilicorr": ("lilicorr", LiLiCorrSettings),
    "domino": ("domino", DominoSettings),
    "speculators": ("speculators", SpeculatorsSettings),
    "speculators-dflash2": ("speculators", SpeculatorsSettings),
}


class DraftSpec(BaseModel):
    """The draft side of the contract. `sources` maps each field to the config key it came from."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="Local folder or Hub repo id the draft was resolved from.")
    config_file: str = "config.json"
    format: DraftFormat
    family: str = Field("", description="The draft family's name (see docs/families.md).")
    architectures: list[str] = Field(default_factory=new_list)
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

    # family-specific heads (XPress refiner, LiLiCorr correlator, Domino projector), by config key
    projector_type: Optional[str] = None
    # one typed group per family, set only for that family (FAMILY_SETTINGS); `sources` names each
    # value's config key as "<group>.<field>"
    xpress: Optional[XPressSettings] = Field(None, description="Qwen3-XPress refiner settings.")
    lilicorr: Optional[LiLiCorrSettings] = Field(None, description="LiLiCorr correlator settings.")
    domino: Optional[DominoSettings] = Field(None, description="Domino projector settings.")
    speculators: Optional[SpeculatorsSettings] = Field(None, description="speculators-format settings.")
    inherited: list[InheritedValue] = Field(
        default_factory=new_list, description="Values the config leaves out, and what the engines use instead."
    )

    quantization_config: Optional[dict[str, Any]] = None

    sources: dict[str, str] = Field(default_factory=dict, description="Field name -> dotted config key.")
    raw: dict[str, Any] = Field(default_factory=dict, exclude=True, repr=False)
    gguf: Optional[GGUFInfo] = Field(None, exclude=True, repr=False,
                                     description="The GGUF header when the draft is a GGUF file (llama.cpp).")

    @property
    def uses_causal_attention(self) -> bool:
        return bool(self.is_causal)

    @property
    def is_speculators(self) -> bool:
        """A vllm-project/speculators checkpoint (`transformer_layer_config`, aux ids = z-lab ids + 1)."""
        return self.format in SPECULATORS_FORMATS

    @property
    def has_v2_layers(self) -> bool:
        """Grouped convolutions around attention and MLP (DFlash 2 and its derivatives, LiLiCorr with them)."""
        return bool(self.conv_kernel_size) or FAMILIES[self.format].v2_layers

    def key(self, field: str, default: Optional[str] = None) -> str:
        """The dotted config key a field was read from (or the natural key if it was absent)."""
        return self.sources.get(field, default or field)

