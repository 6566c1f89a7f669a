"""DF125: the target uses multimodal RoPE sections and the draft plain RoPE."""

from __future__ import annotations

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules._sources import REF_BLOCK

REF_POSITIONS = EngineSource("dflash", "dflash/model.py", "200", "draft and target positions: one 1-D arange")
MLX_POSITIONS = EngineSource("dflash", "dflash/model_mlx.py", "190-192", "draft RoPE offsets: 1-D cache offsets")


def check(ctx: RuleContext):
    section = ctx.target.rope.mrope_section
    if not section or ctx.draft.rope.mrope_section:
        return
    yield Violation(
        f"target rotates positions in mrope sections {quote(section)}, the draft with plain 1-D positions: text-only "
        "prompts match, but after image or video tokens the draft's positions differ from the target's",
        [ctx.tloc("rope.mrope_section")],
    )


RULE = Rule(
    code="DF125",
    name="target-uses-mrope",
    severity="info",
    backends=(COMMON,),
    check=check,
    what="Notes a vision-language target with multimodal RoPE (`mrope_section`) paired with a plain-RoPE draft.",
    why="For text tokens the three mrope position components are equal, so plain RoPE matches; image and video "
    "tokens advance positions differently, so acceptance on multimodal prompts can be lower than on text.",
    example='target {"text_config": {"rope_scaling": {"mrope_section": [24, 20, 20]}}}, draft {"rope_theta": 5000000}',
    fix="Nothing to change for text serving; measure acceptance on your multimodal traffic before relying on it.",
    sources=(REF_POSITIONS, REF_BLOCK, MLX_POSITIONS),
)
