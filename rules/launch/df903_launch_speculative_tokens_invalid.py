"""DF903: speculation configured but drafting nothing, or more than the draft's block can hold."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, Violation


def check(ctx):
    launch = ctx.launch
    if launch.engine == "vllm":
        k = launch.settings.get("num_speculative_tokens")
        if isinstance(k, int) and k <= 0:
            yield Violation(f"num_speculative_tokens {k} in --speculative-config: vLLM requires at least 1 and "
                            "stops at start-up", [ctx.at("num_speculative_tokens")],
                            fix="Set num_speculative_tokens to block_size - 1 (15 for a block of 16).")
    elif launch.engine == "llama.cpp":
        n = launch.settings.get("n_max")
        if not isinstance(n, int) or "n_max" in launch.unresolved:
            return
        block = getattr(ctx.draft, "block_size", None) if ctx.draft is not None else None
        if n == 0:
            yield Violation("--spec-draft-n-max 0: the draft model is loaded but drafts no token; speculation is "
                            "off", [ctx.at("n_max")], severity="warning",
                            fix="Set --spec-draft-n-max to the draft's block_size - 1 (15 for a block of 16).")
        elif isinstance(block, int) and n > block - 1:
            yield Violation(f"--spec-draft-n-max {n} exceeds the draft's block_size {block} - 1: llama.cpp clamps "
                            f"it to {block - 1} with a warning", [ctx.at("n_max")], severity="warning",
                            fix=f"Set --spec-draft-n-max {block - 1}.")


RULE = Rule(
    code="DF903",
    name="launch-speculative-tokens-invalid",
    severity="error",
    backends=("vllm", "llama.cpp"),
    check=check,
    needs=("launch",),
    what="The number of speculative tokens the launch asks for is at least 1 and at most the draft's "
    "block_size - 1 (vLLM num_speculative_tokens, llama.cpp --spec-draft-n-max).",
    why="vLLM refuses 0 at start-up; llama.cpp accepts --spec-draft-n-max 0 and then drafts nothing, so the "
    "deployment pays for the draft and gets no speed-up. More than block_size - 1 is clamped by llama.cpp "
    "(vLLM's case is DF303).",
    example="llama-server ... --spec-type draft-dflash --spec-draft-n-max 0",
    fix="Ask for block_size - 1 speculative tokens (15 for a block of 16).",
    sources=(
        EngineSource("vllm", "vllm/config/speculative.py", "413", "num_speculative_tokens: gt=0"),
        EngineSource("llama.cpp", "common/arg.cpp", "4149-4157", "--spec-draft-n-max accepts 0"),
        EngineSource("llama.cpp", "common/speculative.cpp", "1073-1081", "n_max clamped to block_size - 1"),
    ),
)
