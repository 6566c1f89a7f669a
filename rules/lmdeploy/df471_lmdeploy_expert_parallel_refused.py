"""DF471: lmdeploy's DFlash refuses expert parallelism."""

from __future__ import annotations

from dflash_compat.checker import EngineSource
from dflash_compat.rules.lmdeploy._deploy import BUILDER, deploy_rule

RULE = deploy_rule(
    "DF471", "lmdeploy-expert-parallel-refused", "--ep",
    lambda ctx: ctx.options.lmdeploy_ep if (ctx.options.lmdeploy_ep or 1) != 1 else None,
    what="lmdeploy is launched with `--ep 1` (the default).",
    why="lmdeploy's DFlash V1 does not run the draft under expert parallelism.",
    message="ValueError \"DFlash V1 does not support expert parallel draft execution. Set ep=1.\"",
    example="lmdeploy serve api_server T --backend pytorch --ep 2 --speculative-algorithm dflash ...",
    fix="Drop --ep (or --ep 1).",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "170-171", "ep != 1: ValueError"), BUILDER),
    reads=("ep",),
)
