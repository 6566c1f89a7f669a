"""DF474: lmdeploy's DFlash runs on CUDA only."""

from __future__ import annotations

from dflash_compat.checker import EngineSource
from dflash_compat.rules.lmdeploy._deploy import BUILDER, deploy_rule

RULE = deploy_rule(
    "DF474", "lmdeploy-device-not-cuda", "--device",
    lambda ctx: ctx.options.lmdeploy_device if ctx.options.lmdeploy_device not in (None, "cuda") else None,
    what="lmdeploy is launched with `--device cuda` (the default).",
    why="lmdeploy's DFlash writes the draft's context K/V with CUDA kernels; Ascend, MACA and Cambricon are refused.",
    message="ValueError \"DFlash V1 requires CUDA\"",
    example="lmdeploy serve api_server T --backend pytorch --device ascend --speculative-algorithm dflash ...",
    fix="Run on an NVIDIA GPU (--device cuda); on Ascend use vllm-ascend's DFlash.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "185-192", "device_type != cuda: ValueError"), BUILDER),
    reads=("device",),
)
