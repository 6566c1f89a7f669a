"""DF407: SGLang's target class cannot capture the output of the last decoder layer (layer id N - 1)."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._common import is_int

# SGLang captures the output of layer id at the INPUT of layer id + 1, so id N - 1 asks for capture
# point N, one past the last layer. What happens then depends on the target class (sglang 0.5.23):
NEVER = (
    "captures only inside its layer loop, so capture point N is never reached and the draft gets one feature "
    "fewer than its fc expects: the first DFlash step fails (\"DFLASH target_hidden feature dim mismatch\")"
)
INDEX = "marks self.layers[N] as a capture point, one past the last layer: start-up fails with an IndexError"
CLASSES = {
    # llama.py:943-953 (set) and 486-494 (capture inside the loop); mistral.py:33 subclasses it
    "LlamaForCausalLM": NEVER, "Phi3ForCausalLM": NEVER, "InternLM3ForCausalLM": NEVER,
    "IQuestCoderForCausalLM": NEVER, "MistralForCausalLM": NEVER,
    # qwen3.py:793-805 (set) and 524-532 (loop)
    "Qwen3ForCausalLM": NEVER,
    # qwen3_moe.py:1145-1157 -> 987-990; qwen3_next.py:1303-1313 -> 959-962
    "Qwen3MoeForCausalLM": INDEX, "Qwen3NextForCausalLM": INDEX,
    # qwen3_vl.py:1680-1688 -> the language model: qwen3_moe.py:987-990 / qwen3_5.py:1889-1892
    "Qwen3VLMoeForConditionalGeneration": INDEX,
    "Qwen3_5ForConditionalGeneration": INDEX, "Qwen3_5MoeForConditionalGeneration": INDEX,
}
# The Qwen3.5 text classes check the ids themselves (DF406).


def check(ctx: RuleContext):
    t, d = ctx.target, ctx.draft
    n, ids = t.num_hidden_layers, d.target_layer_ids
    cls = next((a for a in t.architectures if a in CLASSES), None)
    if cls is None or n is None or not isinstance(ids, list) or not any(is_int(i) and i == n - 1 for i in ids):
        return
    if d.target_layer_ids_guessed:
        return  # SGLang derives its own from the running target's depth, and never picks N - 1
    yield Violation(
        f"target_layer_ids include {n - 1}, the last of the target's {n} layers: SGLang's {cls} {CLASSES[cls]}",
        [ctx.dloc("target_layer_ids"), ctx.tloc("num_hidden_layers")],
    )


RULE = Rule(
    code="DF407",
    name="sglang-last-layer-id-unsupported",
    severity="error",
    backends=("sglang",),
    check=check,
    what="For SGLang target classes known to mishandle it (Llama, Mistral, Phi-3, Qwen3, Qwen3-MoE, Qwen3-Next, "
    "Qwen3-VL-MoE, the Qwen3.5 multimodal classes), no layer id is N - 1, the target's last decoder layer.",
    why="SGLang hooks the input of decoder layer id + 1 to get the output of layer id; for the last layer that "
    "point does not exist. Llama- and Qwen3-style classes silently capture one feature fewer and fail at the "
    "first DFlash step; Qwen3-MoE, Qwen3-Next and the Qwen3.5 / Qwen3-VL-MoE multimodal classes index past their "
    "layer list at start-up. (GPT-OSS captures point N after the final norm, like transformers; other classes "
    "were not checked.)",
    example='target Qwen3-8B (36 layers), draft {"dflash_config": {"target_layer_ids": [1, 9, 17, 25, 35]}}',
    fix="Use the draft trained for this target, with its published layer ids (z-lab's stop at N - 3), or serve "
    "this pair with an engine that takes the last layer (DF107 says how each one does).",
    sources=(
        EngineSource("sglang", "sglang/srt/models/llama.py", "486-494", "capture inside the layer loop only"),
        EngineSource("sglang", "sglang/srt/models/llama.py", "943-953", "capture points = ids + 1"),
        EngineSource("sglang", "sglang/srt/models/qwen3.py", "524-532", "capture inside the layer loop only"),
        EngineSource("sglang", "sglang/srt/models/qwen3.py", "793-805", "capture points = ids + 1"),
        EngineSource("sglang", "sglang/srt/models/dflash.py", "830-842", "feature-dim mismatch error"),
        EngineSource("sglang", "sglang/srt/models/qwen3_moe.py", "987-990", "self.layers[id + 1] marked"),
        EngineSource("sglang", "sglang/srt/models/qwen3_next.py", "959-962", "self.layers[id + 1] marked"),
        EngineSource("sglang", "sglang/srt/models/qwen3_vl.py", "1680-1688", "VL classes: the language model's hook"),
        EngineSource("sglang", "sglang/srt/models/qwen3_5.py", "1889-1892", "self.layers[id + 1] marked"),
        EngineSource("sglang", "sglang/srt/models/gpt_oss.py", "727-737", "GPT-OSS: point N after the final norm"),
    ),
)
