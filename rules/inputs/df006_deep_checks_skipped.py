"""DF006: the module-tree checks did not run (framework not installed, or remote code not trusted)."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation

REASONS = ("torch-missing", "mlx-inspector-missing", "remote-code", "inspection-failed")


def check(ctx: RuleContext):
    skip = ctx.module_skip
    if skip is not None and skip.reason in REASONS:
        yield Violation(
            f"module-tree checks skipped: {skip.detail or skip.reason}",
            [],
        )
        return
    if not ctx.has("modules"):
        return
    m = ctx.tree
    errors = "; ".join(f"{step}: {err}" for step, err in sorted(m.fact_errors.items()))
    if errors:
        # the inspector's own failure on an odd model: the rules reading those facts stay silent
        yield Violation(
            f"some module-tree facts could not be gathered ({errors}); the checks that read them did not run",
            [],
        )
    if m.auto_map_not_imported:
        yield Violation(
            f"the repo's own code (auto_map) was not imported: the module checks ran on transformers' built-in "
            f"{m.model_class}, which is what transformers loads without trust_remote_code",
            [ctx.tloc("auto_map", "auto_map")],
        )


RULE = Rule(
    code="DF006",
    name="deep-checks-skipped",
    severity="info",
    backends=(COMMON,),
    check=check,
    what="Reports that the target's module tree was not inspected: torch/transformers (or the MLX inspector) is "
    "not installed, or the target needs its repository's own code and --trust-remote-code was not given (when "
    "transformers has a built-in class for the model type, that class is inspected instead and this says so), or "
    "the inspection itself failed on this model (the error is shown, and the module rules stay silent).",
    why="Paths of the embedding, head and layers, the forward signature and whether the cache can be rolled "
    "back are only known from the module tree; without it those problems surface at launch instead.",
    example="dflash-check Qwen/Qwen3-8B --draft z-lab/Qwen3-8B-DFlash-b16 in an environment without torch",
    fix="Install the extra (`pip install 'dflash-compat[torch]'`, or `[mlx]` for MLX checkpoints) and rerun; for "
    "remote code, review the repository's code and rerun with --trust-remote-code. `--no-deep` runs the config "
    "checks only and silences this.",
)
