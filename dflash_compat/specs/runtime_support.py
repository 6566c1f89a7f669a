"""What the reference runtime (`dflash-check smoke`) can run of a draft's RoPE: read by the runtime, which
refuses the rest, and by rule DF205, which reports it, so the check and smoke say the same."""

from __future__ import annotations

from typing import Optional

from dflash_compat.specs.draft import DraftSpec

__all__ = ["STATIC_ROPE_TYPES", "RUNTIME_ROPE_TYPES", "draft_rope_unsupported"]

# RoPE types whose frequencies do not depend on the sequence length (dynamic / longrope do: the
# runtime's cos/sin tables are computed once, so it does not implement those).
STATIC_ROPE_TYPES = ("linear", "yarn", "llama3", "proportional")
RUNTIME_ROPE_TYPES = ("default", *STATIC_ROPE_TYPES)


def draft_rope_unsupported(spec: DraftSpec) -> Optional[tuple[str, str]]:
    """(config key, why) when the runtime cannot rotate this draft's queries and keys as its config asks; None
    when it can. A partial_rotary_factor with the default RoPE type is runnable: the runtime rotates the whole
    head, as the dflash reference (Qwen3's default RoPE) and the MLX port (nn.RoPE(head_dim)) do (rule DF127);
    the proportional type applies the factor itself."""
    rope = spec.rope
    if rope.mrope_section:
        return spec.key("rope.mrope_section", "rope_scaling.mrope_section"), "a multimodal RoPE (mrope_section)"
    rope_type = rope.rope_type or "default"
    if rope_type not in RUNTIME_ROPE_TYPES:
        return (spec.key("rope.rope_type", "rope_scaling.rope_type"),
                f"RoPE type {rope_type!r}, whose frequencies change with the sequence length")
    partial = rope.partial_rotary_factor
    if rope_type not in ("default", "proportional") and partial is not None and partial != 1:
        # transformers' linear / yarn / llama3 initialisers build head_dim * factor frequencies, which a
        # full-head rotation cannot use (transformers 5.24 modeling_rope_utils.py:179-181); proportional
        # pads them with zeros to the full head (:243-262)
        return (spec.key("rope.partial_rotary_factor", "partial_rotary_factor"),
                f"partial_rotary_factor {partial:g} with RoPE type {rope_type!r}")
    return None
