"""DF009: an engine does not load this draft family, or needs something this draft or target lacks."""

from __future__ import annotations

from typing import Callable

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._sources import DRAFT_REGISTRIES

# The backends data/draft_families.json judges (llama.cpp's converter decides for llama.cpp: DF814).
FAMILY_BACKENDS = ("transformers", "dflash", "vllm", "sglang", "mlx")

# The engine needs data/draft_families.json names as "checks": predicate(ctx) -> True when unmet.
PREDICATES: dict[str, Callable[[RuleContext], bool]] = {
    # vLLM fills 202048 only when the config gives no vocab_size (vllm/config/speculative.py:1159-1166).
    "target_vocab_is_202048": lambda c: c.draft.vocab_size is None and c.target.vocab_size not in (None, 202048),
    "sliding_layers_causal_by_default": lambda c: c.draft.is_causal is None
    and "sliding_attention" in (c.draft.layer_types or []),
    # vLLM 0.34 ricursive_dflash2.py:34 reads config.no_rope_layers for every layer
    "no_rope_layers_missing": lambda c: not isinstance(c.draft.raw.get("no_rope_layers"), list),
}


# The two runtimes on transformers: native generate (`transformers`) and the dflash reference (`dflash`).
SIBLING = {"transformers": "dflash", "dflash": "transformers"}

# The way out for the engines that load z-lab drafts only: dflash-check's converter writes the z-lab layout.
CONVERT_FIX = ("Convert it to the z-lab layout the dflash reference and the MLX port load: "
               "`dflash-check convert DRAFT --to zlab -o OUT`, then use OUT.")


def check(ctx: RuleContext):
    d = ctx.draft
    for engine in FAMILY_BACKENDS:
        support = ctx.family(d.format, engine)
        if support is None:
            continue  # an unknown family: DF005
        if not support.loads:
            loading = [s.engine for s in ctx.families_loading(d.format)]
            others = [s.label for s in ctx.families_loading(d.format)]
            names = ", ".join(others[:-1]) + (" and " if len(others) > 1 else "") + (others[-1] if others else "")
            elsewhere = f"{names} load{'s' if len(others) == 1 else ''} it" if others else "no engine we check does"
            sibling = SIBLING.get(engine)
            # The two transformers runtimes take different draft formats (native: the Muse-Glimmer assistant;
            # the reference: z-lab): a draft made for one is not a bad pair for the other, only another runtime.
            other_runtime = sibling in loading
            yield Violation(
                f"{support.label} does not load {d.family} drafts: {support.reason}; {elsewhere}"
                # the other transformers runtime's format: named without its lines (citing reads the locations
                # file, which a config-only check of an ordinary pair never needs; `rule DF009` cites them)
                + (f"; on transformers, run it with backend `{sibling}`" if other_runtime
                   else f" ({support.cite(ctx.engine_versions)})"),
                [ctx.dloc("architectures", "architectures")],
                fix=CONVERT_FIX if d.is_speculators and engine in ("dflash", "mlx") else None,
                backends=(engine,), severity="info" if other_runtime else None,
            )
            continue
        for need in support.checks:
            if PREDICATES[need.check](ctx):
                yield Violation(
                    f"{need.message} ({'; '.join(s.cite(ctx.version(s.engine)) for s in need.sources)})",
                    [ctx.dloc("architectures", "architectures")],
                    fix=need.fix, severity=need.severity, backends=(engine,),
                )


RULE = Rule(
    code="DF009",
    name="draft-family-not-loadable",
    severity="error",
    backends=FAMILY_BACKENDS,
    check=check,
    what="The engine registers a loader for the draft's family (z-lab DFlash v1/v2, DFlash2-Beam, MiniMax DFlash2, "
    "Muse-Glimmer assistant, Qwen3-XPress, LiLiCorr, Laguna DFlash, Domino, speculators dflash/dflash2), and the "
    "draft and target meet what that loader needs. The verdicts and their engine sources are in "
    "dflash_compat/engines/data/draft_families.json (docs/families.md).",
    why="Each family is served only by some engines: vLLM has no Domino projector and no MiniMax DFlash2 class, "
    "SGLang has no XPress refiner and reads no speculators configs, the MLX port loads only z-lab v1/v2. An "
    "unsupported family fails at start-up, or loads without its extra modules and drafts badly.",
    example='draft {"architectures": ["Qwen3XPressModel"], ...} checked for SGLang',
    fix="Serve the draft with an engine the finding names, or use a draft of a family this engine loads.",
    # The registries; each finding cites the lines its own verdict rests on.
    sources=DRAFT_REGISTRIES,
)
