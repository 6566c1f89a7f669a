"""The tensors a DFlash draft checkpoint holds, per family, and their shapes, computed from its config (for DF6xx).

The backbone (fc, hidden_norm, norm, decoder layers) is common to every family; DFlash 2 and its
derivatives add convolutions and a candidate selector; the other families' heads are in _family_heads.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from dflash_compat.rules.weights._family_heads import COMPANIONS, VOCAB_MAPS, canonical, head_prefixes, head_tensors
from dflash_compat.specs import DraftSpec
from dflash_compat.specs.families import FAMILIES

if TYPE_CHECKING:
    from dflash_compat.modelfacts import DraftWeights

__all__ = [
    "FLOAT_DTYPES",
    "QUANT_SUFFIXES",
    "BUNDLED",
    "layer_index",
    "weight_shapes",
    "source_name",
    "strip_prefix",
    "modelled",
    "expected",
    "expected_v2",
    "expected_head",
    "has_selector",
    "own_head",
    "is_quant_aux",
    "known",
    "known_v1",
    "v2_name",
    "normalise_v2",
]

FLOAT_DTYPES = {"F16", "BF16", "F32", "F64", "F8_E4M3", "F8_E5M2"}
# Companion tensors of quantised weights (bitsandbytes, GPTQ/AWQ, fp8 block scales, MLX affine).
QUANT_SUFFIXES = (
    ".scales", ".biases", ".qweight", ".qzeros", ".g_idx", ".weight_scale", ".weight_scale_inv",
    ".input_scale", ".absmax", ".quant_map", ".quant_state", ".nested_absmax", ".nested_quant_map",
    ".weight_packed", ".weight_shape", ".weight_zero_point",
)
# Tensors old draft revisions shipped although the runtime uses the target's.
BUNDLED = ("embed_tokens.weight", "model.embed_tokens.weight", "lm_head.weight")
_LAYER = re.compile(r"^layers\.(\d+)\.")
_V2_LAYER = (".attention_conv.", ".mlp_conv.")


def strip_prefix(shapes: dict[str, list[int]]) -> tuple[str, dict[str, list[int]]]:
    """Drafts saved from a wrapper carry a prefix ("model.fc.weight"); find it from fc.weight and strip it."""
    if "fc.weight" in shapes:
        return "", shapes
    cands = [k[: -len("fc.weight")] for k in shapes if k.endswith(".fc.weight")]
    if len(cands) != 1:
        return "", shapes
    pre = cands[0]
    return pre, {k[len(pre):] if k.startswith(pre) else k: v for k, v in shapes.items()}


def _names(w: DraftWeights) -> tuple[str, dict[str, str]]:
    """(prefix, our name -> the name in the file): aliases (encoder.fc, midlayer) canonical, prefix stripped."""
    names = set(w.shapes)
    # An alias only stands for a tensor the file does not also hold under the z-lab name (an EAGLE-3
    # `midlayer` next to a DFlash `layers.0` is a second tensor, not a spelling).
    originals = {n: n for n in names}
    for n in names:
        c = canonical(n)
        if c != n and c not in names:
            originals[c] = originals.pop(n)
    pre, _ = strip_prefix(dict.fromkeys(originals, []))
    return pre, {k[len(pre):] if pre and k.startswith(pre) else k: v for k, v in originals.items()}


def weight_shapes(w: DraftWeights) -> tuple[str, dict[str, list[int]], dict[str, str]]:
    """(prefix, name -> shape, name -> dtype) with alias spellings made canonical and any wrapper prefix
    stripped; `source_name` gives a name back as the file spells it."""
    pre, names = _names(w)
    shapes = {k: w.shapes[v] for k, v in names.items()}
    dtypes = {k: w.tensor_dtypes[v] for k, v in names.items() if v in w.tensor_dtypes}
    return pre, shapes, dtypes


def source_name(w: DraftWeights, name: str) -> str:
    """The file's own spelling of a (canonical, prefix-stripped) tensor name, e.g. encoder.fc.weight."""
    pre, names = _names(w)
    return names.get(name, pre + name)


def modelled(d: DraftSpec) -> bool:
    """Whether this family's tensor layout is known here (Laguna drafts and unknown families are not)."""
    return FAMILIES[d.format].weights_modelled


def layer_index(name: str) -> Optional[int]:
    m = _LAYER.match(name)
    return int(m.group(1)) if m else None


def is_quant_aux(name: str) -> bool:
    return name.endswith(QUANT_SUFFIXES)


def _head_dim(d: DraftSpec) -> Optional[int]:
    if d.head_dim:
        return d.head_dim
    if d.num_attention_heads and d.hidden_size % d.num_attention_heads == 0:
        return d.hidden_size // d.num_attention_heads
    return None


def expected(d: DraftSpec, layers: range) -> dict[str, Optional[list[int]]]:
    """Every v1 tensor name -> expected shape (None where the config does not give the size)."""
    h = d.hidden_size
    hd = _head_dim(d)
    q = d.num_attention_heads * hd if d.num_attention_heads and hd else None
    kv = (d.num_key_value_heads or d.num_attention_heads or 0) * hd if hd and (d.num_key_value_heads or d.num_attention_heads) else None
    inter = d.intermediate_size
    ids = d.target_layer_ids if isinstance(d.target_layer_ids, list) else None
    out: dict[str, Optional[list[int]]] = {
        "fc.weight": [h, len(ids) * h] if ids else None,
        "hidden_norm.weight": [h],
        "norm.weight": [h],
    }
    for i in layers:
        p = f"layers.{i}."
        out[p + "input_layernorm.weight"] = [h]
        out[p + "post_attention_layernorm.weight"] = [h]
        out[p + "self_attn.q_proj.weight"] = [q, h] if q else None
        out[p + "self_attn.k_proj.weight"] = [kv, h] if kv else None
        out[p + "self_attn.v_proj.weight"] = [kv, h] if kv else None
        out[p + "self_attn.o_proj.weight"] = [h, q] if q else None
        out[p + "self_attn.q_norm.weight"] = [hd] if hd else None
        out[p + "self_attn.k_norm.weight"] = [hd] if hd else None
        out[p + "mlp.gate_proj.weight"] = [inter, h] if inter else None
        out[p + "mlp.up_proj.weight"] = [inter, h] if inter else None
        out[p + "mlp.down_proj.weight"] = [h, inter] if inter else None
        if d.attention_bias:
            out[p + "self_attn.q_proj.bias"] = [q] if q else None
            out[p + "self_attn.k_proj.bias"] = [kv] if kv else None
            out[p + "self_attn.v_proj.bias"] = [kv] if kv else None
            out[p + "self_attn.o_proj.bias"] = [h]
    return out


def has_selector(d: DraftSpec) -> bool:
    """A candidate selector: DFlash 2 and its derivatives (LiLiCorr has a correlator instead)."""
    return FAMILIES[d.format].v2_layers


def expected_v2(d: DraftSpec, layers: range) -> dict[str, Optional[list[int]]]:
    """DFlash 2 additions: grouped dynamic causal convolutions around attention and MLP (also in LiLiCorr
    drafts that set conv_kernel_size), and the candidate selector's two vocab x rank codebooks plus its
    hidden projection."""
    h, k, g, r = d.hidden_size, d.conv_kernel_size, d.conv_group_size, d.selector_rank
    groups = h // g if g and h % g == 0 else None
    out: dict[str, Optional[list[int]]] = {}
    if not d.has_v2_layers:
        return out
    for i in layers:
        for part in ("attention_conv", "mlp_conv"):
            p = f"layers.{i}.{part}."
            out[p + "base_kernel"] = [2, k, h] if k else None
            out[p + "kernel_projection.weight"] = [2 * k * groups, h] if k and groups else None
    if not has_selector(d):
        return out
    vocab = d.vocab_size
    for book in ("predecessor_codebook", "successor_codebook"):
        out[f"candidate_selector.{book}"] = [vocab, r] if vocab and r else None
    out["candidate_selector.hidden_projection.weight"] = [r, h] if r else None
    return out


def expected_head(d: DraftSpec) -> dict[str, Optional[list[int]]]:
    """The family's own head (XPress refiner, Domino projector) -> expected shape."""
    return head_tensors(d)


def v2_name(name: str) -> bool:
    return name.startswith("candidate_selector.") or any(part in name for part in _V2_LAYER)


def normalise_v2(name: str) -> str:
    # Checkpoints store the codebooks as `candidate_selector.X` or `candidate_selector.X.weight`.
    for book in ("predecessor_codebook", "successor_codebook"):
        if name == f"candidate_selector.{book}.weight":
            return f"candidate_selector.{book}"
    return name


def own_head(d: DraftSpec) -> bool:
    """The draft has its own output head: a reduced draft vocabulary (speculators, vLLM's
    draft_vocab_size) or vLLM's has_own_lm_head (qwen3_dflash.py:754-764)."""
    dv = d.draft_vocab_size
    return bool(d.raw.get("has_own_lm_head")) or (dv is not None and d.vocab_size is not None and dv != d.vocab_size)


def known_v1(d: DraftSpec, name: str) -> bool:
    i = layer_index(name)
    rng = range(i, i + 1) if i is not None else range(0)
    return name in expected(d, rng)


def known(d: DraftSpec, name: str) -> bool:
    """Whether some loader of this draft's family reads a tensor of this (canonical) name."""
    if known_v1(d, name) or name in BUNDLED or is_quant_aux(name) or name.endswith(".bias") or "rotary_emb" in name:
        return True
    if name in VOCAB_MAPS or name in COMPANIONS:
        return True
    if v2_name(name):
        return True  # DF605 judges DFlash 2 tensors against the family and its config
    return name in expected_head(d) or name.startswith(head_prefixes(d))
