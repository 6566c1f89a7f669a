"""DF312: no K was given for vLLM, which has no default for a DFlash draft."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.vllm._helpers import given_k


def check(ctx: RuleContext):
    d = ctx.draft
    if ctx.options.num_speculative_tokens is not None:
        return
    k = given_k(ctx)
    if k is not None and k.where != "speculative_tokens":
        return  # the draft's n_predict is vLLM's default
    bs = d.block_size
    suggest = f"{bs - 1} (block_size - 1)" if bs is not None and bs >= 2 else "block_size - 1"
    served = ""
    if k is not None:
        served = f"; `vllm serve` on the speculators checkpoint itself takes K = {k.value} from its speculative_tokens"
    locs = [ctx.dloc("block_size")] if bs is not None else []
    if ctx.options.complete:  # a whole launch command: it has no K, and vLLM does not start
        yield Violation(
            "the launch gives no num_speculative_tokens in --speculative-config: vLLM stops at start-up "
            f"(\"`num_speculative_tokens` was not provided\"); launch with K = {suggest}{served}",
            locs, severity="error",
            fix=f"Add \"num_speculative_tokens\": {suggest.split()[0]} to --speculative-config.",
        )
        return
    yield Violation(
        "vLLM stops without num_speculative_tokens in --speculative-config (\"`num_speculative_tokens` was not "
        f"provided\"): launch with K = {suggest} and pass it here as --num-speculative-tokens{served}",
        locs,
    )


RULE = Rule(
    code="DF312",
    name="vllm-num-speculative-tokens-missing",
    severity="info",
    backends=("vllm",),
    check=check,
    reads=("method", "draft"),
    what="Notes that no K = `num_speculative_tokens` was given (`--num-speculative-tokens`) and the draft config "
    "has no `n_predict` for vLLM to default to.",
    why="vLLM does not derive K from a DFlash draft's `block_size`: without `num_speculative_tokens` in "
    "--speculative-config it stops at start-up. Only drafts that carry `n_predict` (and speculators checkpoints "
    "served directly, which carry `speculative_tokens`) have a default. An error where the check reads the "
    "whole launch command (`launch`, `serve`, `check --launch`): that launch does not start. An info for "
    "check's own options: you may be passing K at launch and not to this check.",
    example='draft {"block_size": 16} checked without --num-speculative-tokens',
    fix="Add \"num_speculative_tokens\": block_size - 1 to vLLM's --speculative-config, and pass the same value "
    "to this check as --num-speculative-tokens.",
    sources=(
        EngineSource("vllm", "vllm/config/speculative.py", "1600-1603", "default K: the draft's n_predict"),
        EngineSource("vllm", "vllm/config/speculative.py", "1614-1618", "no K: start-up error"),
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/speculator_config.py", "222-227",
                     "no K after the method resolved it: start-up error", version="0.34.0"),
        EngineSource("vllm", "vllm/transformers_utils/configs/speculators/base.py", "121-131",
                     "a served speculators checkpoint: K = speculative_tokens"),
    ),
)
