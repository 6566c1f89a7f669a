"""DF702: no output head (vocab projection) was found in the target's module tree."""

from __future__ import annotations

from dflash_compat.checker import COMMON, Rule, RuleContext, Violation
from dflash_compat.rules._sources import HF_NATIVE_SETUP, MLX_BIND, REF_EMBED


def check(ctx: RuleContext):
    t, m = ctx.target, ctx.tree
    if m.paths is not None and m.paths.head is None:
        yield Violation(
            f"no output head found in {m.model_class or 'the target'}: no lm_head, "
            f"get_output_embeddings() is None and no Linear projects to {t.vocab_size or 'the vocabulary'}",
            [ctx.module_loc("")],
        )


RULE = Rule(
    code="DF702",
    name="target-output-head-not-found",
    severity="error",
    backends=(COMMON,),
    needs=("modules",),
    check=check,
    what="The target's module tree has an output head: `lm_head`, get_output_embeddings(), or a Linear to vocab_size.",
    why="The draft has no LM head of its own: its block logits are the target's head applied to the draft's "
    "hidden states.",
    example="a base model class (LlamaModel) passed where a causal-LM class (LlamaForCausalLM) is needed",
    fix="Load the target with its causal-LM class; for custom models, `dflash-check adapt TARGET -o adapter.py` "
    "generates a shim that exposes the head.",
    sources=(REF_EMBED, HF_NATIVE_SETUP, MLX_BIND),
)
