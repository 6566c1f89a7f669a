"""GGUF models as the typed specs the rules read: a GGUF header (dflash_compat/files/gguf_header.py) turned
into the config a Hugging Face checkpoint would hold, parsed by the same readers, with every field's
source set to the GGUF key it came from.

The draft's layer ids are stored in the z-lab convention the rules share (feature = output of layer
id): llama.cpp's `dflash.target_layers` counts layer *inputs*, so HF id = target_layers - 1 (the
converter writes target_layer_ids + 1, llama.cpp b11434 conversion/qwen.py:798-801). The header
itself travels with the spec (`gguf`), so llama.cpp rules can read keys and tensors directly.
"""

# No `from __future__ import annotations` here: pydantic would compile and evaluate every field's
# annotation string when it builds the models (about 3 ms of every check's start-up).
from typing import TYPE_CHECKING, Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from dflash_compat.exceptions import ConfigError

if TYPE_CHECKING:
    from dflash_compat.files.gguf_header import GGUFHeader

__all__ = ["GGUFInfo", "gguf_info", "gguf_target_config", "gguf_draft_config", "DRAFT_SOURCES", "TARGET_SOURCES"]


class GGUFInfo(BaseModel):
    """What a GGUF header says, in plain values: long arrays as {"type", "count", "sha256"}, tensor
    shapes in ggml order (ne[0] first)."""

    model_config = ConfigDict(extra="forbid")

    file: str
    version: int
    architecture: Optional[str] = None
    kv: dict[str, Any] = Field(default_factory=dict)
    tensors: dict[str, list[Any]] = Field(default_factory=dict, description="name -> [ggml type, [ne0, ne1, ...]]")
    vocab_count: Optional[int] = None
    vocab_sha256: Optional[str] = None

    def get(self, key: str, default: Any = None) -> Any:
        from dflash_compat.files.gguf_header import arch_get

        return arch_get(self.kv, self.architecture, key, default)

    def summary(self) -> dict[str, Any]:
        """What a report shows of the header: the file, architecture, the dflash.* and tokenizer scalars, the
        vocabulary's size and digest, and the tensor count (never the long arrays or templates)."""
        keep = {k: v for k, v in self.kv.items()
                if (k.startswith("dflash.") or k.startswith("tokenizer.ggml.") or k.startswith("general.architecture"))
                and not isinstance(v, dict) and not (isinstance(v, str) and len(v) > 200)
                and not (isinstance(v, list) and len(v) > 64)}
        return {"file": self.file, "version": self.version, "architecture": self.architecture, "keys": keep,
                "vocab_count": self.vocab_count, "vocab_sha256": self.vocab_sha256, "tensor_count": len(self.tensors)}

    def shape(self, tensor: str) -> Optional[list[int]]:
        entry = self.tensors.get(tensor)
        return list(entry[1]) if entry else None


def _plain(value: Any) -> Any:
    from dflash_compat.files.gguf_header import (
        GGUFArray,  # the reader: imported when a GGUF is read, not by every check
    )

    if isinstance(value, GGUFArray):
        return {"type": value.type, "count": value.count, "sha256": value.sha256}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def gguf_info(header: "GGUFHeader") -> GGUFInfo:
    tokens = header.kv.get("tokenizer.ggml.tokens")
    count = sha = None
    from dflash_compat.files.gguf_header import GGUFArray

    if isinstance(tokens, GGUFArray):
        count, sha = tokens.count, tokens.sha256
    elif isinstance(tokens, list):
        import hashlib

        digest = hashlib.sha256()
        for t in tokens:
            digest.update(repr(t).encode("utf-8", "surrogatepass") + b"\0")
        count, sha = len(tokens), digest.hexdigest()
    return GGUFInfo(
        file=header.name, version=header.version, architecture=header.architecture,
        kv={k: _plain(v) for k, v in header.kv.items()},
        tensors={k: [t, list(s)] for k, (t, s) in header.tensors.items()},
        vocab_count=count, vocab_sha256=sha,
    )


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _first(value: Any) -> Any:
    """A per-layer array's first value (head counts, FFN widths may be arrays in GGUF)."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


# spec field -> GGUF key ({arch}: general.architecture), shared by targets and drafts
_COMMON = {
    "hidden_size": "{arch}.embedding_length",
    "num_hidden_layers": "{arch}.block_count",
    "num_attention_heads": "{arch}.attention.head_count",
    "num_key_value_heads": "{arch}.attention.head_count_kv",
    "head_dim": "{arch}.attention.key_length",
    "intermediate_size": "{arch}.feed_forward_length",
    "max_position_embeddings": "{arch}.context_length",
    "sliding_window": "{arch}.attention.sliding_window",
    "final_logit_softcapping": "{arch}.final_logit_softcapping",
    "hidden_act": "{arch}.hidden_activation",
}
TARGET_SOURCES = {**_COMMON, "vocab_size": "tokenizer.ggml.tokens", "model_type": "general.architecture",
                  "rope.theta": "{arch}.rope.freq_base", "rope.mrope_section": "{arch}.rope.dimension_sections",
                  "eos_token_ids": "tokenizer.ggml.eos_token_id", "bos_token_id": "tokenizer.ggml.bos_token_id",
                  "pad_token_id": "tokenizer.ggml.padding_token_id", "mask_token_id": "tokenizer.ggml.mask_token_id",
                  "architectures": "general.architecture"}
DRAFT_SOURCES = {**_COMMON, "vocab_size": "tokenizer.ggml.tokens",
                 "rms_norm_eps": "{arch}.attention.layer_norm_rms_epsilon",
                 "rope.theta": "{arch}.rope.freq_base", "rope.mrope_section": "{arch}.rope.dimension_sections",
                 "target_layer_ids": "dflash.target_layers", "block_size": "dflash.block_size",
                 "mask_token_id": "tokenizer.ggml.mask_token_id", "sample_from_anchor": "dflash.sample_from_anchor",
                 "is_causal": "dflash.attention.causal", "conv_kernel_size": "dflash.conv_kernel_size",
                 "conv_group_size": "dflash.conv_group_size", "selector_rank": "dflash.selector_rank",
                 "selector_top_k": "dflash.selector_top_k", "architectures": "general.architecture",
                 "model_type": "general.architecture", "output_multiplier": "dflash.logit_scale",
                 "input_embedding_scale": "dflash.embedding_scale"}


def sources_for(info: GGUFInfo, table: dict[str, str]) -> dict[str, str]:
    arch = info.architecture or "?"
    return {field: key.replace("{arch}", arch) for field, key in table.items()}


def _fill(info: GGUFInfo, out: dict[str, Any]) -> None:
    for field, key in _COMMON.items():
        value = _first(info.get(key))
        if value is not None and not isinstance(value, dict):
            out[field] = value
    if info.vocab_count is not None:
        out["vocab_size"] = info.vocab_count
    theta = info.get("{arch}.rope.freq_base")
    if isinstance(theta, (int, float)) and not isinstance(theta, bool):
        out["rope_theta"] = theta
    sections = info.get("{arch}.rope.dimension_sections")
    if isinstance(sections, list) and any(_int(s) for s in sections):
        out.setdefault("rope_scaling", {})["mrope_section"] = sections


def gguf_target_config(info: GGUFInfo, where: str) -> dict[str, Any]:
    """The HF-style config of a GGUF target."""
    arch = info.architecture
    if not arch:
        raise ConfigError(f"{where}: no general.architecture; not a model GGUF")
    if arch == "dflash":
        raise ConfigError(f"{where} is a DFlash draft GGUF, not a target; pass the target model as TARGET")
    out: dict[str, Any] = {"model_type": arch, "architectures": []}
    _fill(info, out)
    for field, key in (("eos_token_id", "tokenizer.ggml.eos_token_id"), ("bos_token_id", "tokenizer.ggml.bos_token_id"),
                       ("pad_token_id", "tokenizer.ggml.padding_token_id")):
        if _int(info.get(key)) is not None:
            out[field] = info.get(key)
    return out


def gguf_draft_config(info: GGUFInfo, where: str) -> dict[str, Any]:
    """The z-lab-style config of a DFlash draft GGUF (general.architecture = dflash)."""
    from dflash_compat.exceptions import NotADraftError

    if info.architecture != "dflash":
        raise NotADraftError(f"{where}: general.architecture is {info.architecture!r}, not \"dflash\"; "
                             "pass a DFlash draft GGUF with --draft")
    v2 = "selector_hidden.weight" in info.tensors or _int(info.get("dflash.selector_top_k"))
    out: dict[str, Any] = {"architectures": ["DFlash2DraftModel" if v2 else "DFlashDraftModel"]}
    _fill(info, out)
    eps = info.get("dflash.attention.layer_norm_rms_epsilon")
    if isinstance(eps, float):
        out["rms_norm_eps"] = eps
    cfg: dict[str, Any] = {}
    layers = info.get("dflash.target_layers")
    if isinstance(layers, list):
        cfg["target_layer_ids"] = [x - 1 if _int(x) is not None else x for x in layers]
    for field, key in (("block_size", "dflash.block_size"), ("mask_token_id", "tokenizer.ggml.mask_token_id"),
                       ("conv_kernel_size", "dflash.conv_kernel_size"), ("conv_group_size", "dflash.conv_group_size"),
                       ("selector_rank", "dflash.selector_rank"), ("selector_top_k", "dflash.selector_top_k")):
        if _int(info.get(key)) is not None:
            cfg[field] = info.get(key)
    if isinstance(info.get("dflash.sample_from_anchor"), bool):
        cfg["sample_from_anchor"] = info.get("dflash.sample_from_anchor")
    if isinstance(info.get("dflash.attention.causal"), bool):
        out["is_causal"] = info.get("dflash.attention.causal")
    out["dflash_config"] = cfg
    return out
