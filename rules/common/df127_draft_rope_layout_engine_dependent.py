"""DF127: the draft config carries RoPE layout keys that vLLM and SGLang apply and the reference and MLX ignore."""

from __future__ import annotations

from typing import Any

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._common import is_int
from dflash_compat.rules._sources import (
    HF_QWEN3_ROPE,
    HF_ROPE_PARAMS,
    MLX_ROPE,
    REF_ROPE,
    SGL_ROPE,
    SGL_ROPE_OLD,
    VLLM_NEOX,
    VLLM_ROPE_DIM,
)
from dflash_compat.specs import get_dotted

HF_EXTRA_KEYS = EngineSource("transformers", "transformers/configuration_utils.py", "499-505",
                             "config keys a config class does not declare become attributes (is_neox_style, ...)")
# (config key, who applies it). Keys nobody applies to a DFlash draft are left out: they change nothing.
_NEOX_KEYS = (("is_neox_style", "vLLM and SGLang"), ("rope_is_neox_style", "SGLang"))
_PARTIAL_KEYS = ("partial_rotary_factor", "rope_parameters.partial_rotary_factor",
                 "rope_scaling.partial_rotary_factor")
_ROPE_DIM_KEYS = ("rope_parameters.rope_dim", "rope_scaling.rope_dim")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _found(raw: dict, head_dim, sglang_rope_dim: bool = True) -> list[tuple[str, str]]:
    """(key=value as written, what vLLM / SGLang do with it) for each layout key that changes the rotation."""
    out = []
    for key, who in _NEOX_KEYS:
        value = get_dotted(raw, key)
        if value is False:
            out.append((f"{key}=false", f"{who} rotate interleaved pairs (GPT-J layout)"))
    for key in _PARTIAL_KEYS:
        value = get_dotted(raw, key)
        if _number(value) and 0 < value < 1:
            width = f"{int(head_dim * value)} of {head_dim}" if head_dim else f"{value:g} of the"
            # transformers 5 moves a top-level factor into rope_parameters, where SGLang's DFlash attention
            # does not look (it reads config.partial_rotary_factor): vLLM alone applies it.
            out.append((f"{key}={value:g}", f"vLLM rotates {width} head dims"))
            break
    for key in _ROPE_DIM_KEYS:
        value = get_dotted(raw, key)
        if is_int(value) and value != head_dim:
            who = "vLLM and SGLang rotate" if sglang_rope_dim else "vLLM rotates"
            out.append((f"{key}={value}", f"{who} {value} of {head_dim or '?'} head dims"))
            break
    return out


def check(ctx: RuleContext):
    d = ctx.draft
    # SGLang reads rope_dim from 0.5.23 (sglang/srt/models/dflash.py); before, it rotates the whole head
    found = _found(d.raw, d.head_dim, ctx.engine("sglang").feature("dflash_rope_dim"))
    if not found:
        return
    keys = [k.partition("=")[0] for k, _ in found]
    yield Violation(
        f"draft config sets {', '.join(k for k, _ in found)}: {'; '.join(w for _, w in found)}, while the dflash "
        "reference and MLX rotate every head dim in the neox (rotate-half) layout whatever these keys say; the "
        "draft matches only the engines that rotate the way it was trained",
        [ctx.dloc(k, k) for k in keys],
    )


RULE = Rule(
    code="DF127",
    name="draft-rope-layout-engine-dependent",
    severity="warning",
    backends=(COMMON,),
    check=check,
    what="The draft config has no RoPE layout keys that change the rotation in some engines only: "
    "`is_neox_style: false`, `rope_is_neox_style: false`, a `partial_rotary_factor` below 1 (top level or in "
    "rope_parameters), a `rope_dim` other than head_dim.",
    why="vLLM reads `is_neox_style` and the rotary width (`rope_dim`, else `partial_rotary_factor`, which "
    "transformers 5 moves into rope_parameters) for the draft; SGLang reads `rope_is_neox_style` / `is_neox_style` "
    "and `rope_dim` (its `config.partial_rotary_factor` attribute no longer exists after that move). The dflash "
    "reference rotates with rotate_half over the whole head (Qwen3's default RoPE ignores the partial factor) and "
    "the MLX port builds nn.RoPE(head_dim, traditional=False). A draft trained one way gets rotated the other way "
    "on half of the engines: queries and keys no longer line up, acceptance collapses, nothing errors. A common "
    "slip is a Qwen3.5 draft config that copied the target's `partial_rotary_factor: 0.25` (the published Qwen3.5 "
    "drafts rotate fully).",
    example='draft {"model_type": "qwen3", "head_dim": 128, "partial_rotary_factor": 0.25}',
    fix="Find out how the draft was trained: if it rotates fully in the neox layout (as the dflash reference's "
    "own draft model does), remove the keys; if not, serve it only on an engine that honours them (the message "
    "says which).",
    sources=(REF_ROPE, HF_QWEN3_ROPE, HF_ROPE_PARAMS, MLX_ROPE, VLLM_NEOX, VLLM_ROPE_DIM, SGL_ROPE, SGL_ROPE_OLD,
             HF_EXTRA_KEYS),
)
