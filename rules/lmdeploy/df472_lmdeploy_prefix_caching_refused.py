"""DF472: lmdeploy's DFlash refuses prefix caching."""

from __future__ import annotations

from dflash_compat.checker import EngineSource
from dflash_compat.rules.lmdeploy._deploy import deploy_rule

RULE = deploy_rule(
    "DF472", "lmdeploy-prefix-caching-refused", "--enable-prefix-caching",
    lambda ctx: "is set" if ctx.options.lmdeploy_prefix_caching else None,
    what="lmdeploy is launched without `--enable-prefix-caching`.",
    why="The draft's KV cache holds context features the target produced; reusing a cached prefix would skip them. "
    "lmdeploy refuses the combination.",
    message="ValueError \"DFlash V1 does not support prefix-cache reuse yet\"",
    example="lmdeploy serve api_server T --backend pytorch --enable-prefix-caching --speculative-algorithm dflash ...",
    fix="Drop --enable-prefix-caching.",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "178-179", "enable_prefix_caching: ValueError"),
             EngineSource("lmdeploy", "lmdeploy/pytorch/config.py", "741", "validate_dflash_cache_config(target_cache_cfg)")),
    reads=("prefix_caching",),
)
