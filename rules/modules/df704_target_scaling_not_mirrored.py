"""DF704: the built target scales embeddings or logits in a way the config keys did not reveal, and the draft does not mirror it."""

from __future__ import annotations

import math

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._common import READ_BY
from dflash_compat.rules._sources import HF_NATIVE_EMBED, REF_BLOCK, REF_EMBED, REF_LOGITS


def _close(a, b) -> bool:
    return math.isclose(float(a), float(b), rel_tol=1e-3)


def _config_embed_scale(t):
    # What the config-level rule (DF121) already infers: Gemma sqrt(hidden), Granite embedding_multiplier.
    if t.scales_embeddings and t.hidden_size:
        return math.sqrt(t.hidden_size)
    if t.embedding_multiplier not in (None, 1):
        return float(t.embedding_multiplier)
    return None


def check(ctx: RuleContext):
    t, d, m = ctx.target, ctx.draft, ctx.tree
    s = m.scaling
    if s is None:
        return
    embed, head = (m.paths.embed, m.paths.head) if m.paths else (None, None)
    loc = ctx.module_loc(embed or "")
    # Only the draft families whose loaders read the mirroring key are judged (DF121's READ_BY). The others are
    # fed by the target's own modules: transformers' native path calls the embedding module, scale included
    # (HF_NATIVE_EMBED), and applies the head's raw logits like the target's forward does.
    reads = {field for field, formats in READ_BY.items() if d.format in formats}
    if s.embed_scaled and "input_embedding_scale" in reads:
        value, known = s.embed_scale, _config_embed_scale(t)
        where = ", ".join(s.embed_scale_source)
        have = d.input_embedding_scale
        locs = [loc, ctx.dloc("input_embedding_scale", d.key("input_embedding_scale", "dflash_config.input_embedding_scale"))]
        if value is None:
            if known is None:
                yield Violation(f"the target's embedding output is scaled ({where}) by an amount the meta-device "
                                "tree does not show; check the draft's input_embedding_scale", locs, severity="warning")
        elif known is None or not _close(known, value):
            if have is None:
                yield Violation(f"the target multiplies its embeddings by {value:g} ({where}); the draft config has "
                                "no input_embedding_scale", locs)
            elif not _close(have, value):
                yield Violation(f"the target multiplies its embeddings by {value:g} ({where}); the draft's "
                                f"input_embedding_scale is {have:g}", locs, severity="warning")
    cap = s.logit_softcap
    if "final_logit_softcapping" not in reads:
        cap = None
    if cap is not None and t.final_logit_softcapping is None and not (d.final_logit_softcapping and _close(d.final_logit_softcapping, cap)):
        yield Violation(
            f"the target soft-caps its logits at {cap:g} (a default of {m.model_class}, not written in "
            f"config.json); the draft's final_logit_softcapping is {d.final_logit_softcapping}",
            [ctx.module_loc(head or ""), ctx.dloc("final_logit_softcapping")], severity="warning",
        )
    div = s.logits_scaling
    if div is not None and t.logits_scaling is None and "output_multiplier" in reads:
        mult = d.output_multiplier
        if mult is None or not _close(mult, 1.0 / div):
            yield Violation(
                f"the target divides its logits by {div:g} (a default of {m.model_class}); the draft's "
                f"output_multiplier should be {1.0 / div:g}, it is {mult}",
                [ctx.module_loc(head or ""), ctx.dloc("output_multiplier")], severity="warning",
            )


RULE = Rule(
    code="DF704",
    name="target-scaling-not-mirrored",
    severity="error",
    backends=(COMMON,),
    needs=("modules",),
    check=check,
    what="Scalings the built target applies inside its forward (a scaled embedding module or `embed_scale` "
    "attribute, soft-capping or logit scaling set by the model class's defaults) that the config keys alone do "
    "not reveal are mirrored by the draft's input_embedding_scale / final_logit_softcapping / output_multiplier. "
    "Complements DF121, which reads the config keys.",
    why="The dflash reference reads the target's embedding weights and applies its head directly, bypassing "
    "whatever the target's forward does around them; unmirrored, the draft sees embeddings at the wrong scale "
    "(acceptance near zero) or proposes from differently shaped logits. (Other engines differ: DF126.) Drafts whose "
    "loaders read none of these keys (the Muse Glimmer assistant of transformers' native path, which calls the "
    "target's embedding module, scale included) are not judged.",
    example="a target whose embedding class multiplies by embed_scale=48.0 while its model_type is not a Gemma one",
    fix="Set `dflash_config.input_embedding_scale` (and final_logit_softcapping / output_multiplier) to the values "
    "the message gives, as the draft was trained with.",
    sources=(REF_EMBED, REF_BLOCK, REF_LOGITS, HF_NATIVE_EMBED),
)
