"""`TargetSpec`: what a target model's config.json (plus generation/tokenizer configs) says."""

# No `from __future__ import annotations` here: pydantic would compile and evaluate every field's
# annotation string when it builds the models (about 3 ms of every check's start-up).
from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from dflash_compat.contract import ATTENTION_LAYER_TYPES, RECURRENT_MODEL_TYPES, TEXT_CONFIG_KEYS
from dflash_compat.exceptions import ConfigError
from dflash_compat.specs._reader import MISSING, ConfigReader, get_dotted
from dflash_compat.specs.common import Number, RopeInfo, SizeInt, new_list, read_rope, validate_spec
from dflash_compat.specs.families import detect_format
from dflash_compat.specs.gguf import GGUFInfo

__all__ = ["TargetSpec", "parse_target_config"]

# Encoder-decoder models: generative, but not the decoder-only causal LM a DFlash target must be.
ENCODER_DECODER_MODEL_TYPES = {
    "t5", "mt5", "umt5", "bart", "mbart", "pegasus", "pegasus_x", "marian", "blenderbot", "blenderbot-small",
    "m2m_100", "nllb-moe", "whisper", "led", "prophetnet", "fsmt", "bigbird_pegasus", "longt5", "switch_transformers",
}

# GGUF architectures (llama.cpp general.architecture) of encoder-only or encoder-decoder models.
GGUF_ENCODER_ARCHITECTURES = frozenset({"bert", "nomic-bert", "nomic-bert-moe", "neo-bert", "modern-bert",
                                        "jina-bert-v2", "jina-bert-v3", "t5", "t5encoder", "clip", "eurobert"})

CAUSAL_LM_SUFFIXES = ("ForCausalLM", "ForConditionalGeneration", "LMHeadModel", "ForImageTextToText")
# Causal-LM classes whose names follow none of those patterns: the whole list of
# MODEL_FOR_CAUSAL_LM_MAPPING_NAMES's irregular names (transformers 5.25.0 models/auto/modeling_auto.py:803, :963;
# 5.24.0 :794, :950).
CAUSAL_LM_CLASSES = frozenset({"BertGenerationDecoder", "ReformerModelWithLMHead"})


class TargetSpec(BaseModel):
    """The target side of the contract; `text_prefix` is "" or e.g. "text_config" for VLMs."""

    model_config = ConfigDict(extra="forbid")

    source: str
    config_file: str = "config.json"
    model_type: Optional[str] = None
    text_model_type: Optional[str] = None
    architectures: list[str] = Field(default_factory=new_list)
    text_prefix: str = Field("", description="Key under which the language model's config lives.")

    hidden_size: Optional[SizeInt] = None
    num_hidden_layers: Optional[SizeInt] = None
    vocab_size: Optional[SizeInt] = None
    num_attention_heads: Optional[SizeInt] = None
    num_key_value_heads: Optional[SizeInt] = None
    head_dim: Optional[SizeInt] = None
    # a list for models with per-layer widths (gemma3n)
    intermediate_size: Optional[Union[SizeInt, list[SizeInt]]] = None
    hidden_act: Optional[str] = None
    max_position_embeddings: Optional[SizeInt] = None
    torch_dtype: Optional[str] = None

    rope: RopeInfo = Field(default_factory=RopeInfo)
    tie_word_embeddings: Optional[StrictBool] = None

    layer_types: Optional[list[Any]] = None
    sliding_window: Optional[StrictInt] = None
    use_sliding_window: Optional[StrictBool] = None
    recurrent_layers: list[int] = Field(
        default_factory=new_list, description="Indices of recurrent / linear-attention / SSM layers."
    )
    is_hybrid: bool = Field(False, description="Has layers whose cache cannot be rolled back by cropping.")

    bos_token_id: Optional[Any] = None
    eos_token_ids: list[int] = Field(default_factory=new_list)
    pad_token_id: Optional[Any] = None
    mask_token: Optional[str] = Field(None, description="Tokenizer's mask token, if it declares one.")
    mask_token_id: Optional[int] = None

    final_logit_softcapping: Optional[Number] = None
    embedding_multiplier: Optional[Number] = None
    logits_scaling: Optional[Number] = None
    scales_embeddings: bool = Field(False, description="Gemma-style: embeddings multiplied by sqrt(hidden).")

    quantization_config: Optional[dict[str, Any]] = None
    quant_method: Optional[str] = Field(None, description="quantization_config.quant_method, if quantised.")
    lm_head_quantized: Optional[bool] = Field(
        None, description="Whether the quantisation covers the output head (None: not quantised)."
    )
    auto_map: Optional[dict[str, Any]] = None

    sources: dict[str, str] = Field(default_factory=dict)
    raw: dict[str, Any] = Field(default_factory=dict, exclude=True, repr=False)
    gguf: Optional[GGUFInfo] = Field(None, exclude=True, repr=False,
                                     description="The GGUF header when the target is a GGUF file (llama.cpp).")

    def key(self, field: str, default: Optional[str] = None) -> str:
        if field in self.sources:
            return self.sources[field]
        base = default or field
        return f"{self.text_prefix}.{base}" if self.text_prefix else base

    @property
    def is_causal_lm(self) -> bool:
        """A generative class by name, or an auto_map that registers one (e.g. ChatGLMModel repos)."""
        if (self.text_model_type or self.model_type) in ENCODER_DECODER_MODEL_TYPES:
            return False
        if self.gguf is not None:  # llama.cpp's architectures: the encoders among them are not targets
            return self.model_type not in GGUF_ENCODER_ARCHITECTURES
        if any(isinstance(a, str) and (a.endswith(CAUSAL_LM_SUFFIXES) or a in CAUSAL_LM_CLASSES)
               for a in self.architectures):
            return True
        return any(k in (self.auto_map or {}) for k in ("AutoModelForCausalLM", "AutoModelForImageTextToText"))

    @property
    def needs_remote_code(self) -> bool:
        return bool(self.auto_map)

    @property
    def uses_sliding_window(self) -> bool:
        """Some layers attend over a sliding window (per `layer_types`, else a set `sliding_window`)."""
        if isinstance(self.layer_types, list):
            return "sliding_attention" in self.layer_types and self.sliding_window is not None
        return self.sliding_window is not None


def _as_id_list(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    return []


# Field -> the keys configs spell it with, in the order they are tried.
_FIELDS = {
    "hidden_size": ("hidden_size", "n_embd", "d_model", "dim", "emb_dim"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
    "num_attention_heads": ("num_attention_heads", "n_head", "num_heads", "n_heads"),
    "num_key_value_heads": ("num_key_value_heads", "num_kv_heads", "n_kv_heads"),
    "head_dim": ("head_dim",),
    "intermediate_size": ("intermediate_size", "ffn_dim", "n_inner"),
    "hidden_act": ("hidden_act", "activation_function", "hidden_activation"),
    "max_position_embeddings": ("max_position_embeddings", "n_positions"),
    "layer_types": ("layer_types",),
    "sliding_window": ("sliding_window", "sliding_window_size", "attention_window_size"),
    "use_sliding_window": ("use_sliding_window",),
    "final_logit_softcapping": ("final_logit_softcapping",),
    "embedding_multiplier": ("embedding_multiplier",),
    "logits_scaling": ("logits_scaling",),
}


def parse_target_config(
    raw: Any,
    source: str,
    config_file: str = "config.json",
    generation_config: Optional[dict[str, Any]] = None,
    tokenizer_config: Optional[dict[str, Any]] = None,
) -> TargetSpec:
    """Build a TargetSpec from parsed JSON files; raises ConfigError on wrong types."""
    where = f"target {source}: {config_file}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} is not a JSON object")
    if (isinstance(raw.get("dflash_config"), dict) or raw.get("speculators_model_type")
            or detect_format(raw, where) not in (None, "unknown")):
        raise ConfigError(f"{where} is a DFlash draft config, not a target; pass the target model as TARGET")

    odd = next((k for k in TEXT_CONFIG_KEYS if raw.get(k) is not None and not isinstance(raw[k], dict)), None)
    if odd is not None:  # transformers builds a sub-config from it and fails with a traceback
        raise ConfigError(f"{where}: `{odd}` should be a JSON object (got {type(raw[odd]).__name__})")
    prefix = next((k for k in TEXT_CONFIG_KEYS if isinstance(raw.get(k), dict)), "")
    r = ConfigReader(raw, prefix=prefix)
    rope = _read_fields(r, raw, prefix)
    values = dict(r.values)
    sliding = values.get("sliding_window")
    if sliding is not None and values.get("use_sliding_window") is False:
        values["sliding_window"] = None  # Qwen2-style configs carry a window they do not use.
    _special_tokens(values, r, raw, prefix, config_file, generation_config)
    values["mask_token"], values["mask_token_id"] = _tokenizer_mask(tokenizer_config)
    _quantization(values, r)

    model_type = values.get("text_model_type") or values.get("model_type")
    if not isinstance(model_type, str):
        model_type = None  # a wrong type is reported by the validation below, naming the key
    values["scales_embeddings"] = bool(model_type and str(model_type).startswith(("gemma", "recurrent_gemma")))
    recurrent = _recurrent_layers(values, raw, prefix)
    values["recurrent_layers"] = recurrent
    values["is_hybrid"] = bool(recurrent) or model_type in RECURRENT_MODEL_TYPES

    return validate_spec(
        TargetSpec,
        dict(values, source=source, config_file=config_file, text_prefix=prefix, rope=rope,
             sources=r.sources, raw=raw),
        r.sources,
        where,
    )


def _read_fields(r: ConfigReader, raw: dict[str, Any], prefix: str) -> RopeInfo:
    """The plain fields into `r` (the text config's own value first, else the top level's); returns the RoPE."""
    r.set("architectures", raw.get("architectures") or [], "architectures")
    r.take("model_type", "model_type", absolute=True)
    if prefix:
        r.take("text_model_type", "model_type")
    for field, keys in _FIELDS.items():
        r.take(field, *keys)
        if field not in r.values and prefix:
            r.take(field, *keys, absolute=True)
    if "num_hidden_layers" not in r.values:
        # Nemotron-H in transformers 5.25.0 saves one `layers_block_type` entry per layer and derives
        # num_hidden_layers from it (a property), so its config.json has no layer count of its own.
        scope = raw.get(prefix) if prefix else raw
        kinds = scope.get("layers_block_type") if isinstance(scope, dict) else None
        if isinstance(kinds, list) and kinds and all(isinstance(k, str) for k in kinds):
            r.set("num_hidden_layers", len(kinds), f"{prefix}.layers_block_type" if prefix else "layers_block_type")
    # VLMs often keep these at the top level; the text config's own value wins.
    r.take("tie_word_embeddings", "tie_word_embeddings")
    if "tie_word_embeddings" not in r.values:
        r.take("tie_word_embeddings", "tie_word_embeddings", absolute=True)
    r.take("torch_dtype", "dtype", "torch_dtype", absolute=True)
    r.take("quantization_config", "quantization_config", absolute=True)
    r.take("auto_map", "auto_map", absolute=True)
    rope = read_rope(r)
    if not rope and prefix:
        top = ConfigReader(raw)
        rope = read_rope(top)
        r.sources.update({k: v for k, v in top.sources.items() if k.startswith("rope.")})
    return rope


def _special_tokens(values: dict[str, Any], r: ConfigReader, raw: dict[str, Any], prefix: str, config_file: str,
                    generation_config: Optional[dict[str, Any]]) -> None:
    """EOS / BOS / PAD ids: the config, then generation_config.json (which engines prefer)."""
    eos: list[int] = []
    seen: set[int] = set()  # a set beside the list: generation configs may list 100,000 ids
    for doc, name, key in (
        (raw, config_file, f"{prefix}.eos_token_id" if prefix else "eos_token_id"),
        (raw, config_file, "eos_token_id"),
        (generation_config or {}, "generation_config.json", "eos_token_id"),
    ):
        value = get_dotted(doc, key)
        if value is not MISSING:
            src = key if name == config_file else f"{name}:{key}"
            for i in _as_id_list(value):
                if i not in seen:
                    seen.add(i)
                    eos.append(i)
                    r.sources[f"eos_token_ids.{i}"] = src  # where this id came from, for findings about it
            r.sources.setdefault("eos_token_ids", src)
    values["eos_token_ids"] = eos
    for field, key in (("bos_token_id", "bos_token_id"), ("pad_token_id", "pad_token_id")):
        value = r.take(field, key)
        if value is None:
            value = r.take(field, key, absolute=True)
        if value is None and generation_config and generation_config.get(key) is not None:
            value = generation_config[key]
            r.sources[field] = f"generation_config.json:{key}"
        values[field] = value


def _quantization(values: dict[str, Any], r: ConfigReader) -> None:
    quant = values.get("quantization_config")
    if quant == {}:
        values["quantization_config"] = quant = None  # an empty block quantises nothing
    if isinstance(quant, dict):
        method = quant.get("quant_method")
        values["quant_method"] = method if isinstance(method, str) else None
        values["lm_head_quantized"], key = _lm_head_quantized(quant)
        r.sources["lm_head_quantized"] = f"quantization_config.{key}" if key else "quantization_config"


# Lists in which quantisation configs name the modules they leave in full precision.
_SKIP_LIST_KEYS = (
    "modules_to_not_convert", "ignore", "ignored_layers", "exclude_modules", "exclude_layers",
    "llm_int8_skip_modules", "skip_modules",
)
# Methods whose loaders (transformers, vLLM) leave the output head unquantised unless the config
# says `"lm_head": true` (GPTQ/AWQ family) or lists nothing at all (bitsandbytes, block FP8).
_HEAD_KEPT_BY_DEFAULT = {"gptq", "awq", "gptq_marlin", "awq_marlin", "auto-round", "bitsandbytes", "fp8"}


def _lm_head_quantized(quant: dict[str, Any]) -> tuple[bool, Optional[str]]:
    """Whether a quantization_config covers lm_head, and the key that decided it."""
    for key in _SKIP_LIST_KEYS:
        listed = quant.get(key)
        if isinstance(listed, list) and any(isinstance(m, str) and "lm_head" in m for m in listed):
            return False, key
    flag = quant.get("lm_head")
    if isinstance(flag, bool):
        return flag, "lm_head"
    method = str(quant.get("quant_method") or "").lower()
    if method in _HEAD_KEPT_BY_DEFAULT:
        return False, "quant_method"
    listed_key = next((k for k in _SKIP_LIST_KEYS if k in quant), None)
    return True, listed_key or "quant_method"


def _tokenizer_mask(tok: Optional[dict[str, Any]]) -> tuple[Optional[str], Optional[int]]:
    if not isinstance(tok, dict):
        return None, None
    mask = tok.get("mask_token")
    if isinstance(mask, dict):
        mask = mask.get("content")
    if not isinstance(mask, str):
        return None, None
    added = tok.get("added_tokens_decoder")
    if isinstance(added, dict):
        for idx, entry in added.items():
            if isinstance(entry, dict) and entry.get("content") == mask:
                try:
                    return mask, int(idx)
                except ValueError:
                    break
    return mask, None


def _recurrent_layers(values: dict[str, Any], raw: dict[str, Any], prefix: str) -> list[int]:
    """Indices of layers that keep recurrent state, from the per-layer type lists configs use."""
    kinds = values.get("layer_types")
    if not isinstance(kinds, list):
        for key in ("layers_block_type", "block_types"):
            found = get_dotted(raw, f"{prefix}.{key}" if prefix else key)
            if isinstance(found, list):
                kinds = found
                break
    if isinstance(kinds, list):
        return [i for i, k in enumerate(kinds) if isinstance(k, str) and k not in ATTENTION_LAYER_TYPES]
    pattern = get_dotted(raw, f"{prefix}.hybrid_override_pattern" if prefix else "hybrid_override_pattern")
    if isinstance(pattern, str):  # Nemotron-H: "M" mamba, "*" attention, "-" MLP
        return [i for i, c in enumerate(pattern) if c == "M"]
    return []
