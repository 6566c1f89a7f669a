"""DF203: transformers' generate(speculation_type="dflash") cannot find the draft's keys at the top level."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._sources import HF_NATIVE_KEYS, HF_NATIVE_SETUP, REF_DRAFT_VALUE
from dflash_compat.specs import MISSING, get_dotted
from dflash_compat.specs.families import DFLASH_PACKAGE_FORMATS

HF_ASSISTANT_DEFAULTS = EngineSource(
    "transformers", "transformers/models/muse_glimmer_assistant/configuration_muse_glimmer_assistant.py", "81-90",
    "defaults block_size 16, mask_token_id 201818, target_layer_ids [1, 13, 25, 37, 49]")
HF_ASSISTANT_CALL = EngineSource("transformers", "transformers/generation/candidate_generator.py", "1636-1642",
                                 "assistant(noise_embeds=, context_hidden_states=, position_ids=, cache=)")
KEYS = ("target_layer_ids", "block_size", "mask_token_id")
# What transformers' only DFlash assistant config class fills in when a key is absent.
ASSISTANT_DEFAULTS = {"block_size": 16, "mask_token_id": 201818, "target_layer_ids": [1, 13, 25, 37, 49]}


def check(ctx: RuleContext):
    d = ctx.draft
    if d.is_speculators:
        return
    raw = d.raw
    top = {k: get_dotted(raw, k) for k in KEYS}
    nested = {k: get_dotted(raw, f"dflash_config.{k}") for k in KEYS}
    missing = [k for k in KEYS if top[k] in (MISSING, None)]
    if missing and d.model_type == "muse_glimmer_assistant":
        filled = ", ".join(f"{k}={ASSISTANT_DEFAULTS[k]}" for k in missing)
        yield Violation(f"top-level {', '.join(missing)} absent: transformers' MuseGlimmerAssistantConfig fills "
                        f"in {filled} without a word", [ctx.dloc(k, k) for k in missing], severity="warning")
    elif missing and d.format not in DFLASH_PACKAGE_FORMATS:
        # z-lab drafts run through the dflash package, which reads dflash_config; generate() cannot call their
        # class anyway (HF_ASSISTANT_CALL), so nested keys are how they are meant to be. Say it for the others.
        yield Violation(
            f"the draft config has no top-level {', '.join(missing)}: transformers' "
            "generate(speculation_type='dflash') reads only assistant_model.config.<key> and raises AttributeError "
            "before drafting (the dflash package reads dflash_config first and is unaffected)",
            [ctx.dloc(k, k) for k in missing],
        )
    # Two block sizes / mask ids are DF116 / DF114; two id lists only matter here.
    k = "target_layer_ids"
    if top[k] not in (MISSING, None) and nested[k] not in (MISSING, None) and top[k] != nested[k]:
        yield Violation(f"top-level {k} {top[k]} != dflash_config.{k} {nested[k]}: transformers' generate() uses "
                        "the top-level list, the dflash reference and the engines the nested one",
                        [ctx.dloc(k, k), ctx.dloc(k, f"dflash_config.{k}")], severity="warning")


RULE = Rule(
    code="DF203",
    name="hf-generate-keys-not-top-level",
    severity="info",
    backends=("transformers",),
    check=check,
    what="A draft meant for transformers' own generate(speculation_type='dflash') (the Muse-Glimmer assistant, or a "
    "draft of no known family) has `target_layer_ids`, `block_size` and `mask_token_id` as top-level keys, as "
    "generate() reads them; and any draft's top-level id list agrees with dflash_config's. z-lab DFlash v1 / v2 "
    "drafts keep the keys nested on purpose: they run through the dflash package.",
    why="transformers 5.24 drives a DFlash assistant itself: DFlashTokenCandidateGenerator reads "
    "assistant_model.config.target_layer_ids / block_size / mask_token_id as plain attributes, so a z-lab config "
    "that keeps them in dflash_config fails with AttributeError; its only DFlash assistant class "
    "(MuseGlimmerAssistantConfig) instead fills absent keys with block 16, mask 201818 and ids [1, 13, 25, 37, 49] "
    "silently. It also calls the assistant with noise_embeds= / context_hidden_states= / cache=, which the dflash "
    "package's DFlashDraftModel does not take: z-lab checkpoints run through the dflash package, not generate().",
    example='draft {"block_size": 16, "dflash_config": {"mask_token_id": 151669, '
    '"target_layer_ids": [1, 9, 17, 25, 33]}}',
    fix="Run z-lab drafts with the dflash package (`dflash generate transformers ...`) or `dflash-check smoke`; for "
    "generate(), copy the three keys to the top level of the config (and use an assistant class that takes "
    "noise_embeds / context_hidden_states).",
    sources=(HF_NATIVE_SETUP, HF_NATIVE_KEYS, HF_ASSISTANT_CALL, HF_ASSISTANT_DEFAULTS, REF_DRAFT_VALUE),
)
