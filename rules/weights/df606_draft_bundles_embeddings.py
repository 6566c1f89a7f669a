"""DF606: the draft's weights carry its own embed_tokens / lm_head (an old revision)."""

from __future__ import annotations

from dflash_compat.checker import COMMON, EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote
from dflash_compat.rules.weights._draft_tensors import BUNDLED, own_head, weight_shapes


def check(ctx: RuleContext):
    d, t = ctx.draft, ctx.target
    pre, shapes, _ = weight_shapes(ctx.headers)
    # A reduced draft vocabulary has its own head (speculators, vLLM's draft_vocab_size): not a copy.
    found = [n for n in BUNDLED if n in shapes and not (n == "lm_head.weight" and own_head(d))]
    if not found:
        return
    notes = []
    for n in found:
        s = shapes[n]
        if len(s) == 2 and t.vocab_size and (s[0] != t.vocab_size or s[1] != t.hidden_size):
            notes.append(f"{n} is {quote(s)}, the target's table is [{t.vocab_size}, {t.hidden_size}]")
    detail = f" ({'; '.join(notes)}: it was trained with another vocabulary)" if notes else ""
    yield Violation(
        f"the draft weights include {', '.join(found)}: vLLM keeps and uses a bundled copy that differs from the "
        f"target's, SGLang ignores them, strict loaders reject them as unexpected keys{detail}",
        [ctx.tensor_loc(pre + n, ctx.headers.tensor_files.get(pre + n, "model.safetensors")) for n in found],
    )


RULE = Rule(
    code="DF606",
    name="draft-bundles-embeddings",
    severity="warning",
    backends=(COMMON,),
    needs=("weights",),
    check=check,
    what="The draft's weights hold no `embed_tokens` / `lm_head` tensors.",
    why="A DFlash draft embeds with the target's input embedding and projects with the target's head; early "
    "revisions shipped copies. Engines disagree on them: vLLM compares a bundled tensor with the target's and "
    "keeps the draft's own when they differ (so the draft runs with its table, not the target's), SGLang skips "
    "weights its draft class has no slot for, strict loaders fail on an unexpected key. A copy of another "
    "model's table reveals a draft trained for a different target.",
    example="draft weights with embed_tokens.weight [151936, 4096] and lm_head.weight [151936, 4096]",
    fix="Use the current revision of the draft (without the copies), or drop the tensors when re-saving; on vLLM "
    "that makes the draft use the target's embedding and head.",
    sources=(
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/eagle/utils.py", "18-34", "V2: share unless it differs"),
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/dflash/utils.py", "60-73", "V2: embedding and head"),
        EngineSource("vllm", "vllm/v1/spec_decode/llm_base_proposer.py", "1438-1466", "V1: distinct embedding kept"),
        EngineSource("vllm", "vllm/v1/spec_decode/llm_base_proposer.py", "1516-1546", "V1: distinct lm_head kept"),
        EngineSource("sglang", "sglang/srt/models/dflash.py", "942-946", "unexpected weights ignored"),
    ),
)
