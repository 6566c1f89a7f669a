"""Regenerate examples/tiny-qwen3: a tiny random-weight Qwen3 target and a DFlash draft for it.

The pair is small enough to commit (a few hundred KB) and runs `dflash-check smoke` on a CPU in
seconds. The draft is random, so its acceptance length is low; the point is the lossless check.
It needs only an install with the torch extra (pip install 'dflash-compat[torch]'):

    python examples/make_tiny_pair.py            # writes examples/tiny-qwen3 beside this file
    python examples/make_tiny_pair.py OUT_DIR    # or into OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dflash_compat.runtime.tiny_pair import (
    draft_config,
    draft_state,
    save_draft,
    save_tokenizer,
    target_config,
    tiny_target,
)

OUT = Path(__file__).resolve().parent / "tiny-qwen3"


def main(out: Path = OUT) -> None:
    settings = dict(vocab=64, hidden=32, layers=4)
    model = tiny_target(seed=0, **settings)
    model.save_pretrained(str(out / "target"), safe_serialization=True)
    save_tokenizer(out / "target", settings["vocab"])
    dcfg = draft_config(target_config(**settings), block_size=8, target_layer_ids=(0, 2))
    save_draft(out / "draft", dcfg, draft_state(dcfg, seed=100))
    sizes = {str(p.relative_to(out)): p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file()}
    print(json.dumps(sizes, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
