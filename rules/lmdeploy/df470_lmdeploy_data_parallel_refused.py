"""DF470: lmdeploy's DFlash refuses data parallelism."""

from __future__ import annotations

from dflash_compat.checker import EngineSource
from dflash_compat.rules.lmdeploy._deploy import BUILDER, deploy_rule

RULE = deploy_rule(
    "DF470", "lmdeploy-data-parallel-refused", "--dp",
    lambda ctx: ctx.options.lmdeploy_dp if (ctx.options.lmdeploy_dp or 1) != 1 else None,
    what="lmdeploy is launched with `--dp 1` (the default).",
    why="lmdeploy's DFlash V1 runs the draft in one data-parallel group only.",
    message="ValueError \"DFlash V1 does not support data parallelism. Set dp=1.\"",
    example="lmdeploy serve api_server T --backend pytorch --dp 2 --speculative-algorithm dflash ...",
    fix="Drop --dp (or --dp 1); spread the target with --tp instead.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "168-169", "dp != 1: ValueError"), BUILDER),
    reads=("dp",),
)
