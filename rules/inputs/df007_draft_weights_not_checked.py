"""DF007: the draft's weight headers could not be read, so the shape checks did not run."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation

WHY = {
    "no-safetensors": "the draft has no .safetensors files",
    "pickle-only": "the draft ships only pickled .bin/.pt weights, which dflash-check never opens",
    "pickle-shards": "the draft's shard index lists pickled (non-safetensors) weight files, which dflash-check "
    "never opens",
    "hub-offline": "HF_HUB_OFFLINE is set and the weights are not in the local cache",
    "hub-unreachable": "the Hub could not be asked for the weight headers",
}


def check(ctx: RuleContext):
    w = ctx.weights_skip
    if w is not None and w.reason != "gguf":  # a GGUF draft: its header was read, DF8xx check its tensors
        yield Violation(
            f"draft weights not checked: {WHY.get(w.reason, w.reason)}",
            [ctx.tensor_loc("*", file="*.safetensors")],
        )


RULE = Rule(
    code="DF007",
    name="draft-weights-not-checked",
    severity="info",
    backends=(COMMON,),
    check=check,
    what="Reports that the draft's safetensors headers were not read (no safetensors, offline, Hub unreachable).",
    why="fc, attention and MLP shapes, the layer count and the dtype are checked from the headers; without them "
    "a wrong checkpoint is only found when an engine loads it.",
    example="a draft folder with config.json and pytorch_model.bin only",
    fix="Provide the draft's .safetensors files (or go online so their headers can be read from the Hub); "
    "convert pickled weights to safetensors.",
)
