"""Tiny random-weight Qwen3 targets and DFlash drafts (z-lab layout) for the runtime tests and benchmarks.

The builders live in dflash_compat.runtime.tiny_pair (installed, so that examples/make_tiny_pair.py runs
from an install); this adds the test helpers around them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional, Sequence

import torch

from dflash_compat.runtime.tiny_pair import (  # noqa: F401 - re-exported for the tests
    draft_config,
    draft_state,
    save_draft,
    save_tokenizer,
    target_config,
    tiny_target,
)


def make_pair(tmp: Path, *, seed: int = 0, version: int = 1, block_size: int = 8, target: Optional[dict] = None,
              draft: Optional[dict] = None, save_target: bool = False):
    """(target model, target config dict, draft folder): a tiny target and a random draft saved in z-lab layout."""
    tcfg = target_config(**(target or {}))
    model = tiny_target(seed, **(target or {}))
    dcfg = draft_config(tcfg, version=version, block_size=block_size, **(draft or {}))
    folder = save_draft(tmp / f"draft-v{version}-s{seed}-b{block_size}", dcfg, draft_state(dcfg, seed + 100))
    if save_target:
        model.save_pretrained(str(tmp / "target"), safe_serialization=True)
    return model, tcfg, folder


def reference_generate(draft_folder: Path, target, prompt: Sequence[int], max_new_tokens: int,
                       block_size: Optional[int] = None, stop: Optional[list[int]] = None, v2: bool = False):
    """The dflash package's dflash_generate on CPU (its CUDA clock swapped for perf_counter)."""
    import dflash.model as ref

    ref._cuda_time = time.perf_counter
    cls = ref.DFlash2DraftModel if v2 else ref.DFlashDraftModel
    draft = cls.from_pretrained(str(draft_folder), dtype=torch.float32).eval()
    ids = torch.tensor([list(prompt)])
    out = ref.dflash_generate(draft, target, ids, max_new_tokens, stop, block_size=block_size, return_stats=True)
    return out.output_ids[0, len(prompt):].tolist(), out.acceptance_lengths
