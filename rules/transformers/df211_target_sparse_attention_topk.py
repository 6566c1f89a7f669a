"""DF211: the target's sparse attention keeps only the top-k keys its indexer scores highest, so past k tokens of
context a block verify and token-by-token decoding can attend to different keys."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules._common import text_int

HF_DSA_TOPK = EngineSource(
    "transformers", "transformers/models/deepseek_v32/modeling_deepseek_v32.py", "227-241",
    "DeepseekV32Indexer: ReLU'd per-head scores, weighted and summed, then topk(min(index_topk, keys)) per query "
    "(GLM-MoE-DSA: modeling_glm_moe_dsa.py:237-242)", version="5.25.0")
REF_VERIFY_BLOCK = EngineSource("dflash", "dflash/model.py", "269-272",
                                "the verify forward scores the whole block in one call on the cached prefix")

TOPK_KEY = "index_topk"


def check(ctx: RuleContext):
    key, k = text_int(ctx, TOPK_KEY)
    if k is None or k <= 0:
        return
    yield Violation(
        f"the target's sparse attention keeps the top {k} keys per query ({key}, {HF_DSA_TOPK.cite()}): once the "
        f"context is longer than {k} tokens, the block verify ({REF_VERIFY_BLOCK.cite()}) and token-by-token "
        "greedy decoding compute the indexer scores in different shapes, and a near-tie can select different keys; "
        "output may then differ from greedy decoding without any draft error (measured on tiny DeepSeek-V3.2 and "
        "GLM-MoE-DSA targets with index_topk 4, transformers 5.25.0: logits differ by up to 3.4 past 20 tokens)",
        [ctx.tloc(TOPK_KEY, key=key)],
    )


RULE = Rule(
    code="DF211",
    name="target-sparse-attention-topk",
    severity="warning",
    backends=("transformers", "dflash"),
    check=check,
    what="Notes a target whose attention is sparse by a learned top-k key selection (`index_topk`: DeepSeek-V3.2, "
    "GLM-MoE-DSA and other DSA models), for which losslessness against greedy decoding holds only while the "
    "context is at most index_topk tokens.",
    why="The indexer ranks every cached key per query and keeps the top index_topk. Within that many tokens it "
    "keeps them all, so a multi-token verify and one-token decoding attend to the same keys. Past it, the "
    "selection is a discontinuous function of scores that the block and the one-token paths compute with "
    "different shapes (float rounding differs) and that ReLU often leaves tied at zero: the two paths can keep "
    "different keys, and speculative output can differ from greedy decoding although every verify step is "
    "exact. Measured here: the target's own parallel forward and its incremental decoding disagree past "
    "index_topk tokens, in transformers' generate(speculation_type=\"dflash\"), the dflash reference and smoke "
    "alike; with index_topk above the context they agree.",
    example='target {"model_type": "deepseek_v32", "index_topk": 2048}',
    fix="Expect token-identical output only up to index_topk tokens of context; compare longer outputs by quality, "
    "not token for token (smoke's verdict then reports where they first differ).",
    sources=(HF_DSA_TOPK, REF_VERIFY_BLOCK),
)
