"""The draft's resolved settings, shared by the PyTorch and MLX runtimes (pure Python, no framework).

`draft_config(spec)` turns a DraftSpec into the DraftConfig both `torch_draft.py` and `mlx_draft.py`
build their modules from, so the two runtimes read a checkpoint the same way by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from dflash_compat.contract import DEFAULT_BLOCK_SIZE, DRAFT_LAYER_TYPES
from dflash_compat.exceptions import ConfigError, RuntimeUnsupportedError, WeightsError
from dflash_compat.specs import DraftSpec
from dflash_compat.specs.runtime_support import STATIC_ROPE_TYPES, draft_rope_unsupported
from dflash_compat.specs.tensor_names import canonical

__all__ = [
    "DraftConfig",
    "draft_config",
    "normalise_key",
    "put_tensor",
    "DraftFacts",
    "STATIC_ROPE_TYPES",
    "RUNTIME_FORMATS",
    "refusal",
]

# The draft families whose maths both runtimes implement. The Muse-Glimmer assistant is DFlash v1 under
# other names and defaults (transformers 5.24.0 models/muse_glimmer_assistant/, cited below as MGA for
# modeling_muse_glimmer_assistant.py and MGC for configuration_muse_glimmer_assistant.py).
RUNTIME_FORMATS = frozenset({"zlab-v1", "zlab-v2", "muse-glimmer-assistant"})
ASSISTANT = "muse-glimmer-assistant"

_CONVERT = "convert it with `dflash-check convert DRAFT --to zlab -o OUT` and run that"
_AS_V2 = "set architectures to [\"DFlash2DraftModel\"] to run it as z-lab DFlash 2"
# Why each other family is refused, and what would make it runnable (one line each).
_REFUSALS = {
    "speculators": f"speculators-format drafts are not run directly; {_CONVERT}",
    "speculators-dflash2": f"speculators-format drafts are not run directly; {_CONVERT}",
    "dflash2-beam": "vLLM runs it with its own Beam module (vllm/models/beam/nvidia/dflash2.py), which the "
                    f"reference runtime does not implement; SGLang loads it as DFlash2DraftModel "
                    f"(srt/models/dflash.py:1313-1314): {_AS_V2}",
    "ricursive-dflash2": "its no_rope_layers skip RoPE (vLLM 0.34 vllm/model_executor/models/ricursive_dflash2.py:"
                         "31-35), which the reference runtime does not implement; it needs NoPE layers to run",
    "minimax-dflash2": "SGLang loads it as DFlash2DraftModel (srt/models/dflash.py:1305-1306), which the "
                       f"reference runtime does not assume for another name; {_AS_V2}",
    "qwen3-xpress": "its refiner head (vLLM vllm/model_executor/models/qwen3_xpress.py:22-60) is not "
                    "implemented in the reference runtime; it needs a port of that head to run",
    "lilicorr": "its lattice correlator (vLLM vllm/model_executor/models/lilicorr.py) is not implemented "
                "in the reference runtime; it needs a port of that head to run",
    "laguna-dflash": "its decoder layers are Laguna layers (vLLM vllm/model_executor/models/laguna_dflash.py), "
                     "which the reference runtime does not implement; it needs a port of those layers to run",
    "domino": "its Domino projector (SGLang srt/models/dflash.py:778-800) is not implemented in the "
              "reference runtime; it needs a port of the projector to run",
    "unknown": "no engine family matches its config, so the runtime cannot know its maths; name a known "
               "architecture (see docs/families.md)",
}
# MuseGlimmerAssistantConfig defaults (MGC:52, 64-73), applied when the config leaves a value out, as
# transformers, vLLM and SGLang (which read the config through that class) do.
_ASSISTANT_DEFAULTS = {"num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                       "intermediate_size": 19968, "rms_norm_eps": 1e-5, "sliding_window": 2048,
                       "rope_theta": 500000.0}


@dataclass(frozen=True)
class DraftConfig:
    """Everything the draft's modules and the runtime read, resolved from a DraftSpec."""

    version: int  # 1: DFlashDraftModel, 2: DFlash2DraftModel
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: Optional[int]
    rms_norm_eps: float
    attention_bias: bool
    target_layer_ids: tuple[int, ...]
    block_size: int
    mask_token_id: int
    layer_causal: tuple[bool, ...]  # per draft layer
    layer_window: tuple[Optional[int], ...]  # per draft layer: sliding window, or None
    # True: a key is visible when |q - k| <= window (transformers' bidirectional overlay, the assistant's);
    # False: q - k < window, and k - q < window when non-causal (Qwen3's causal overlay)
    window_inclusive: bool = False
    input_embedding_scale: float = 1.0
    output_multiplier: float = 1.0
    final_logit_softcapping: Optional[float] = None
    rope_theta: float = 10000.0
    rope_type: str = "default"
    conv_kernel_size: int = 0
    conv_group_size: int = 0
    selector_rank: int = 0
    selector_top_k: int = 0


def refusal(spec: DraftSpec) -> Optional[str]:
    """Why the reference runtime cannot run this draft's family (one line), or None when it can."""
    if spec.format in RUNTIME_FORMATS:
        return None
    why = _REFUSALS.get(spec.format, "the reference runtime does not implement this family")
    return f"{spec.family} drafts do not run in the reference runtime (z-lab DFlash v1/v2 and the " \
           f"Muse-Glimmer assistant do): {why}"


def _value(spec: DraftSpec, name: str) -> Any:
    """A config value, or for the assistant the config class's default when the config leaves it out."""
    value = spec.rope.theta if name == "rope_theta" else getattr(spec, name)
    if value is None and spec.format == ASSISTANT:
        return _ASSISTANT_DEFAULTS.get(name)
    return value


def _attention(spec: DraftSpec, n: int, where: str) -> tuple[tuple[bool, ...], tuple[Optional[int], ...], bool]:
    """Per layer: causal, sliding window; and whether the window is inclusive."""
    assistant = spec.format == ASSISTANT
    # the assistant's layers are sliding unless the config says otherwise (MGC:86-87)
    default_types = ["sliding_attention" if assistant else "full_attention"] * n
    layer_types = list(spec.layer_types or default_types)
    if len(layer_types) != n or any(t not in DRAFT_LAYER_TYPES for t in layer_types):
        raise ConfigError(f"{where}: `layer_types` must list full_attention / sliding_attention for each of {n} layers")
    if assistant:
        if spec.is_causal:
            raise RuntimeUnsupportedError(
                f"{where}: {spec.key('is_causal')} true in a Muse-Glimmer assistant config: transformers ignores it "
                "(modeling_muse_glimmer_assistant.py:147) while vLLM and SGLang honour it; remove it")
        # bidirectional in every layer (MGA:147, masks at MGA:426-429; vLLM forces dflash_config.causal false,
        # vllm/config/speculative.py:1159-1166); a sliding layer always applies its window, with no
        # use_sliding_window gate (MGA:149-151, 211), as |q - kv| <= window (transformers
        # masking_utils.py:139-149)
        window = _value(spec, "sliding_window")
        return (tuple(False for _ in layer_types),
                tuple(window if t == "sliding_attention" else None for t in layer_types), True)
    # As transformers' Qwen3Config (and so the dflash package) does: the window takes effect only
    # with use_sliding_window; a sliding layer without it is causal with no window.
    window = spec.sliding_window if spec.raw.get("use_sliding_window") else None
    causal = tuple(t == "sliding_attention" if spec.is_causal is None else bool(spec.is_causal) for t in layer_types)
    return causal, tuple(window if t == "sliding_attention" else None for t in layer_types), False


def draft_config(spec: DraftSpec) -> DraftConfig:
    """Resolve a DraftSpec into a DraftConfig, with the reference runtime's defaults."""
    where = f"draft {spec.source}: {spec.config_file}"
    why = refusal(spec)
    if why is not None:
        raise RuntimeUnsupportedError(f"{where}: {why}")
    if spec.hidden_act not in (None, "silu"):
        raise RuntimeUnsupportedError(f"{where}: hidden_act {spec.hidden_act!r} is not supported (silu only)")
    heads, inter = _value(spec, "num_attention_heads"), _value(spec, "intermediate_size")
    if heads is None:
        raise ConfigError(f"{where}: `num_attention_heads` is required")
    if inter is None:
        raise ConfigError(f"{where}: `intermediate_size` is required")
    if spec.mask_token_id is None:
        raise ConfigError(f"{where}: `{spec.key('mask_token_id', 'dflash_config.mask_token_id')}` is required")
    ids = spec.target_layer_ids
    if not ids or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise ConfigError(f"{where}: `{spec.key('target_layer_ids', 'dflash_config.target_layer_ids')}` must be a "
                          "non-empty list of layer indices")
    n = spec.num_hidden_layers
    causal, windows, inclusive = _attention(spec, n, where)
    rope = spec.rope
    unsupported = draft_rope_unsupported(spec)  # rule DF205 reports the same
    if unsupported is not None:
        raise RuntimeUnsupportedError(f"{where}: {unsupported[1]} is not supported by the reference runtime (DF205)")
    rope_type = rope.rope_type or "default"
    version = 2 if spec.format == "zlab-v2" else 1
    if version == 2:
        missing = [k for k in ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")
                   if getattr(spec, k) is None]
        if missing:
            raise ConfigError(f"{where}: a DFlash 2 draft needs dflash_config.{', dflash_config.'.join(missing)}")
        if spec.hidden_size % spec.conv_group_size:
            raise ConfigError(f"{where}: conv_group_size {spec.conv_group_size} does not divide hidden_size")
    block = spec.block_size if spec.block_size is not None else DEFAULT_BLOCK_SIZE
    if block < 1:
        raise ConfigError(f"{where}: block_size must be >= 1 (got {block})")
    softcap = spec.final_logit_softcapping
    eps, theta = _value(spec, "rms_norm_eps"), _value(spec, "rope_theta")
    return DraftConfig(
        version=version,
        hidden_size=spec.hidden_size,
        num_layers=n,
        num_heads=heads,
        num_kv_heads=_value(spec, "num_key_value_heads") or heads,
        head_dim=_value(spec, "head_dim") or spec.hidden_size // heads,
        intermediate_size=inter,
        vocab_size=spec.vocab_size,
        rms_norm_eps=float(eps if eps is not None else 1e-6),
        # the assistant's projections have no bias whatever the config says (MGA:153-156)
        attention_bias=bool(spec.attention_bias) and spec.format != ASSISTANT,
        target_layer_ids=tuple(ids),
        block_size=block,
        mask_token_id=spec.mask_token_id,
        layer_causal=causal,
        layer_window=windows,
        window_inclusive=inclusive,
        input_embedding_scale=float(spec.input_embedding_scale if spec.input_embedding_scale is not None else 1.0),
        output_multiplier=float(spec.output_multiplier if spec.output_multiplier is not None else 1.0),
        final_logit_softcapping=float(softcap) if softcap is not None and softcap > 0 else None,
        rope_theta=float(theta if theta is not None else 10000.0),
        rope_type=rope_type,
        conv_kernel_size=spec.conv_kernel_size or 0,
        conv_group_size=spec.conv_group_size or 0,
        selector_rank=spec.selector_rank or 0,
        selector_top_k=spec.selector_top_k or 0,
    )


def normalise_key(name: str) -> str:
    """A draft checkpoint's tensor name as our modules (both runtimes) name it."""
    # some exports prefix every name with "model."; z-lab names never start with it
    name = name[len("model."):] if name.startswith("model.") else name
    # the other families' spellings (encoder.fc, encoder.output_norm_enc, midlayer): one table, specs/tensor_names.py
    name = canonical(name)
    # z-lab v2 checkpoints store the codebooks as bare tensors
    if name in ("candidate_selector.predecessor_codebook", "candidate_selector.successor_codebook"):
        return name + ".weight"
    return name


def put_tensor(state: dict[str, Any], name: str, tensor: Any, where: object) -> None:
    """Store a loaded tensor under its normalised name; two spellings of one tensor (a `midlayer` next to a
    `layers.0`, or a file holding both `fc` and `encoder.fc`) are refused, never silently overwritten."""
    key = normalise_key(name)
    if key in state:
        raise WeightsError(f"{where}: two tensors stand for {key} (one of them {name}); keep one spelling")
    state[key] = tensor


class DraftFacts:
    """What the runtime reads from a draft model of either framework (a base of both runtimes'
    DFlashDraftModel; `cfg` is the model's DraftConfig)."""

    cfg: DraftConfig

    @property
    def block_size(self) -> int:
        return self.cfg.block_size

    @property
    def mask_token_id(self) -> int:
        return self.cfg.mask_token_id

    @property
    def target_layer_ids(self) -> tuple[int, ...]:
        return self.cfg.target_layer_ids
