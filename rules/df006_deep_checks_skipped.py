"""DF006: the module-tree checks did not run (framework not installed, or remote code not trusted)."""

from __future__ import annotations

from dflash_compat.engine import COMMON, CheckContext, Rule, Violation

REASONS = ("torch-missing", "mlx-inspector-missing", "remote-code")


def check(ctx: CheckContext):
    deep = ctx.target.deep
    if deep.get("skipped") in REASONS:
        yield Violation(
            f"module-tree checks skipped: {deep.get('detail') or deep['skipped']}",
            [ctx.module_loc("")],
        )


RULE = Rule(
    code="DF006",
    name="deep-checks-skipped",
    severity="info",
    backends=(COMMON,),
    check=check,
    what="Reports that the target's module tree was not inspected: torch/transformers (or the MLX inspector) is "
    "not installed, or the target needs its repository's own code and --trust-remote-code was not given. Only "
    "the config-level and weight-header checks ran.",
    why="Paths of the embedding, head and layers, the forward signature and whether the cache can be rolled "
    "back are only known from the module tree; without it those problems surface at launch instead.",
    example="dflash-check Qwen/Qwen3-8B --draft z-lab/Qwen3-8B-DFlash-b16 in an environment without torch",
    fix="Install the extra (`pip install 'dflash-compat[torch]'`, or `[mlx]` for MLX checkpoints) and rerun; for "
    "remote code, review the repository's code and rerun with --trust-remote-code. `--no-deep` runs the config "
    "checks only and silences this.",
)
