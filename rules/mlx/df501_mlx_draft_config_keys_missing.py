"""DF501: the draft config lacks keys the MLX draft loader reads directly."""

from __future__ import annotations

from dflash_compat.checker import Rule, RuleContext, Violation
from dflash_compat.rules._sources import MLX_LOAD_DRAFT
from dflash_compat.specs import MISSING, get_dotted

KEYS = (
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "vocab_size", "rms_norm_eps", "max_position_embeddings", "num_target_layers",
    "dflash_config.target_layer_ids", "dflash_config.mask_token_id",
)


def check(ctx: RuleContext):
    raw = ctx.draft.raw
    missing = [k for k in KEYS if get_dotted(raw, k) in (MISSING, None)]
    if not missing:
        return
    fmt = " (a speculators-format draft: MLX loads only the z-lab layout)" if ctx.draft.is_speculators else ""
    yield Violation(
        f"draft config lacks {', '.join(missing)}, which the MLX loader reads as required keys{fmt}",
        [ctx.dloc(k, k) for k in missing],
    )


RULE = Rule(
    code="DF501",
    name="mlx-draft-config-keys-missing",
    severity="error",
    backends=("mlx",),
    check=check,
    what="The draft's config.json has, exactly at these keys: " + ", ".join(KEYS) + ".",
    why="The MLX port indexes the JSON directly instead of applying Qwen3 defaults or fallbacks, so a key that "
    "other engines can do without (head_dim, num_target_layers, the nested ids) is a KeyError on MLX.",
    example='draft {"hidden_size": 4096, ..., "mask_token_id": 151669} (no head_dim, mask id not nested)',
    fix="Add the listed keys to the draft's config.json (head_dim = hidden_size / num_attention_heads for Qwen3 "
    "drafts unless the model card says otherwise).",
    sources=(MLX_LOAD_DRAFT,),
)
