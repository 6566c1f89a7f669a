"""DF473: lmdeploy's DFlash refuses a quantised KV cache (--quant-policy other than 0)."""

from __future__ import annotations

from dflash_compat.checker import EngineSource
from dflash_compat.rules.lmdeploy._deploy import deploy_rule

RULE = deploy_rule(
    "DF473", "lmdeploy-kv-quantization-refused", "--quant-policy",
    lambda ctx: ctx.options.lmdeploy_quant_policy if ctx.options.lmdeploy_quant_policy else None,
    what="lmdeploy is launched with `--quant-policy 0` (the default: no KV-cache quantisation).",
    why="The draft's KV cache is written from the target's features at full precision; lmdeploy refuses every KV "
    "quantisation policy with DFlash.",
    message="ValueError \"DFlash V1 does not support KV-cache quantization yet. Set quant_policy=0.\"",
    example="lmdeploy serve api_server T --backend pytorch --quant-policy 8 --speculative-algorithm dflash ...",
    fix="Drop --quant-policy (or --quant-policy 0).",
    sources=(EngineSource("lmdeploy", "lmdeploy/pytorch/spec_decode/dflash_utils.py", "180-182", "quant_policy != 0: ValueError"),
             EngineSource("lmdeploy", "lmdeploy/pytorch/config.py", "741", "validate_dflash_cache_config(target_cache_cfg)")),
    reads=("quant_policy",),
)
