"""DF406: SGLang's Qwen3.5 text model classes refuse layer ids that are not sorted, unique and below N - 1."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._common import is_int

# The text-only Qwen3.5 classes (sglang/srt/models/qwen3_5_text.py EntryClass); the multimodal
# Qwen3_5*ForConditionalGeneration classes capture through Qwen3-VL's hook instead (DF407).
TEXT_CLASSES = ("Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM")


def check(ctx: RuleContext):
    t, d = ctx.target, ctx.draft
    ids, n = d.target_layer_ids, t.num_hidden_layers
    cls = next((a for a in t.architectures if a in TEXT_CLASSES), None)
    if cls is None or n is None or not isinstance(ids, list) or not ids or not all(is_int(i) for i in ids):
        return
    if d.target_layer_ids_guessed:
        return  # SGLang derives its own from the running target's depth, and never picks N - 1
    problems = []
    if ids != sorted(set(ids)):
        problems.append("not unique and strictly increasing")
    # Ids outside [0, N) stop SGLang earlier, in its own range check (DF104 reports them).
    if n - 1 in ids:
        problems.append(f"include the last layer {n - 1}, outside [0, {n - 1})")
    if not problems:
        return
    yield Violation(
        f"target_layer_ids {ids} are {' and '.join(problems)}: SGLang's {cls} stops at start-up "
        f"(\"target_layer_ids must be unique, strictly increasing, and in [0, {n - 1})\")",
        [ctx.dloc("target_layer_ids"), ctx.tloc("num_hidden_layers")],
    )


RULE = Rule(
    code="DF406",
    name="sglang-qwen3-5-layer-ids-rejected",
    severity="error",
    backends=("sglang",),
    check=check,
    what="With an SGLang Qwen3.5 text target (`Qwen3_5ForCausalLM`, `Qwen3_5MoeForCausalLM`), the draft's layer "
    "ids are unique, strictly increasing and in [0, N - 1), N = the target's decoder layers.",
    why="These classes validate the ids before capturing: each id must have a following layer, because SGLang "
    "captures the output of layer id at the input of layer id + 1, and the Qwen3.5 backbone marks capture points "
    "on the layers themselves. Anything else stops the server at start-up.",
    example='target {"architectures": ["Qwen3_5MoeForCausalLM"], "num_hidden_layers": 40}, '
    'draft {"dflash_config": {"target_layer_ids": [1, 10, 19, 28, 39]}}',
    fix="Use the draft trained for this target, with its published layer ids; an id of N - 1 cannot be served by "
    "SGLang's Qwen3.5 classes.",
    sources=(
        EngineSource("sglang", "sglang/srt/models/qwen3_5_text.py", "134-148", "ids checked, then shifted by one"),
        EngineSource("sglang", "sglang/srt/models/qwen3_5_text.py", "335", "EntryClass: the text classes"),
    ),
)
