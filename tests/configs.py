"""Config dicts for tests: a known-good Qwen3-8B pair and helpers to bend it into bad ones."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Optional

from dflash_compat.checker import BACKENDS, RuleContext, run_rules
from dflash_compat.deployment.options import CheckOptions
from dflash_compat.engines.registry import Versions, select_versions
from dflash_compat.rules import RULES_BY_CODE
from dflash_compat.specs import parse_draft_config, parse_target_config

# The published Qwen3-8B config (abridged to the fields the contract reads).
QWEN3_8B = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_act": "silu",
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "sliding_window": None,
    "use_sliding_window": False,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 151936,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
}

# The z-lab Qwen3-8B-DFlash-b16 draft config (fields as published).
QWEN3_8B_DRAFT = {
    "architectures": ["DFlashDraftModel"],
    "model_type": "qwen3",
    "attention_bias": False,
    "block_size": 16,
    "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33]},
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "max_position_embeddings": 40960,
    "num_attention_heads": 32,
    "num_hidden_layers": 5,
    "num_key_value_heads": 8,
    "num_target_layers": 36,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "torch_dtype": "bfloat16",
    "vocab_size": 151936,
}

# The same draft in vllm-project/speculators layout (aux ids are z-lab ids + 1).
QWEN3_8B_SPECULATORS = {
    "speculators_model_type": "dflash",
    "architectures": ["DFlashSpeculator"],
    "aux_hidden_state_layer_ids": [2, 10, 18, 26, 34],
    "mask_token_id": 151669,
    "block_size": 16,
    "draft_vocab_size": 151936,
    "target_hidden_size": 4096,
    "speculators_config": {
        "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 15}],
        "verifier": {"name_or_path": "Qwen/Qwen3-8B", "architectures": ["Qwen3ForCausalLM"]},
    },
    "transformer_layer_config": {
        "model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 5, "num_attention_heads": 32,
        "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288, "vocab_size": 151936,
        "rms_norm_eps": 1e-06, "rope_theta": 1000000, "hidden_act": "silu",
    },
}


def merge(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """Deep copy of `base` with dotted keys set (`**{"dflash_config.mask_token_id": 3}`);
    a value of DELETE removes the key."""
    out = copy.deepcopy(base)
    for dotted, value in changes.items():
        node = out
        parts = dotted.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        if value is DELETE:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = value
    return out


DELETE = object()


def target(**changes: Any) -> dict[str, Any]:
    return merge(QWEN3_8B, **changes)


def draft(**changes: Any) -> dict[str, Any]:
    return merge(QWEN3_8B_DRAFT, **changes)


def speculators_draft(**changes: Any) -> dict[str, Any]:
    return merge(QWEN3_8B_SPECULATORS, **changes)


def run_rule(
    code: str,
    target_cfg: Optional[dict] = None,
    draft_cfg: Optional[dict] = None,
    options: Optional[CheckOptions] = None,
    backends=BACKENDS,
    target_extra: Optional[dict] = None,
    versions: Any = None,
    **parse_kw: Any,
):
    """Findings of one rule on the given configs (defaults: the known-good pair). `versions`: the engine
    releases to judge at (engine_versions.Versions, or NAME==VERSION strings); default: the newest bundled."""
    t = parse_target_config(target_cfg if target_cfg is not None else target(), "target", **parse_kw)
    d = parse_draft_config(draft_cfg if draft_cfg is not None else draft(), "draft")
    if target_extra:
        t = t.model_copy(update=target_extra)
    if versions is not None and not isinstance(versions, Versions):
        versions = select_versions(option=tuple(versions), installed=False)
    ctx = RuleContext(target=t, draft=d, options=options or CheckOptions(), versions=versions)
    return run_rules(ctx, [RULES_BY_CODE[code]], backends)


def catches(code: str, *args: Any, **kw: Any) -> bool:
    return any(f.code == code for f in run_rule(code, *args, **kw))


def write_model(folder: Path, config: dict[str, Any], **files: dict[str, Any]) -> Path:
    """Write config.json (and e.g. generation_config=...) into `folder`; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    for name, content in files.items():
        (folder / f"{name}.json").write_text(json.dumps(content, indent=2))
    return folder


FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture_config(name: str) -> dict[str, Any]:
    """A published config.json kept under tests/fixtures (`configs/<name>` or `pairs/<pair>/<side>`)."""
    folder = FIXTURES / name if "/" in name else FIXTURES / "configs" / name
    return json.loads((folder / "config.json").read_text())
