"""The tensors each draft family adds to the DFlash backbone, and the names engines accept for them.

Each entry is read from the loader that builds the module (file:line in the engine release named in
dflash_compat.contract.ENGINE_VERSIONS); shapes are computed from the draft's config.
"""

from __future__ import annotations

from typing import Optional

from dflash_compat.specs import DraftSpec
from dflash_compat.specs.tensor_names import ALIASES, canonical

__all__ = ["ALIASES", "canonical", "head_tensors", "head_prefixes", "VOCAB_MAPS", "COMPANIONS"]

# A reduced draft vocabulary's maps: vLLM loads `d2t` as draft_id_to_target_id and skips `t2d`
# (qwen3_dflash.py:861-865); speculators saves both (speculators/models/dflash/core.py:43-60).
VOCAB_MAPS = ("d2t", "t2d")
# Tensors some loaders accept next to the backbone: vLLM's separately trained mask row, loaded from
# mask_embedding.pt (a pickle we never open) into the `mask_embedding` parameter (qwen3_dflash.py:437-447).
COMPANIONS = ("mask_embedding",)


def _int(value: object) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def head_prefixes(d: DraftSpec) -> tuple[str, ...]:
    """Name prefixes of the family's extra head, every tensor under which the family's loader reads."""
    return {
        # LiLiCorr's correlator: vLLM lilicorr.py:526-535, SGLang srt/models/lilicorr.py:155-169.
        "lilicorr": ("lilicorr.",),
        "qwen3-xpress": ("xpress_head.",),
        "domino": ("prefix_gru.", "embed_proj."),
    }.get(d.format, ())


def head_tensors(d: DraftSpec) -> dict[str, Optional[list[int]]]:
    """The family head's required tensors -> expected shape (None: the config does not fix it)."""
    if d.format == "qwen3-xpress":
        return _xpress(d)
    if d.format == "domino":
        return _domino(d)
    return {}  # LiLiCorr's head is checked by name prefix only: its layout depends on lilicorr_* keys


def _xpress(d: DraftSpec) -> dict[str, Optional[list[int]]]:
    # vLLM qwen3_xpress.py:22-60 (XPressRefinerHead) and 227-237 (checkpoint names -> parameters).
    x = d.xpress
    h, v = d.hidden_size, d.vocab_size
    # the refiner's defaults when the config leaves them out (qwen3_xpress.py:258-263; FAMILY_DEFAULTS)
    r = _int(x.rank if x and x.rank is not None else 256)
    m = _int(x.mlp_hidden if x and x.mlp_hidden is not None else 512)
    p = "xpress_head."
    return {
        p + "w1.weight": [v, r] if v and r else None,  # nn.Embedding(vocab, r)
        p + "down_h.weight": [r, h] if r else None,
        p + "down_g.weight": [r, h] if r else None,
        p + "in_proj.weight": [r, 3 * r] if r else None,
        p + "mix.L": None,  # the raw mixer, folded with the block's lower triangle at load (qwen3_xpress.py:84-94)
        p + "mlp.gate_proj.weight": [m, r] if m and r else None,
        p + "mlp.up_proj.weight": [m, r] if m and r else None,
        p + "mlp.down_proj.weight": [r, m] if m and r else None,
        p + "w2.weight": [v, r] if v and r else None,
    }


def _domino(d: DraftSpec) -> dict[str, Optional[list[int]]]:
    # SGLang srt/models/dflash.py:784-800 builds them; 987-999 requires all four.
    x = d.domino
    g = _int(x.gru_hidden_dim if x else None)
    e = _int(x.emb_dim if x else None)
    h, v = d.hidden_size, d.vocab_size
    return {
        "prefix_gru.weight_ih_l0": [3 * g, h] if g else None,  # nn.GRU(hidden -> g), bias=False
        "prefix_gru.weight_hh_l0": [3 * g, g] if g else None,
        "embed_proj.0.weight": [e, h + g] if e and g else None,
        "embed_proj.2.weight": [v, e] if v and e else None,
    }
