"""Regenerate examples/tiny-qwen3: a tiny random-weight Qwen3 target and a DFlash draft for it.

The pair is small enough to commit (a few hundred KB) and runs `dflash-check smoke` on a CPU in
seconds. The draft is random, so its acceptance length is low; the point is the lossless check.
Run from the repository root: .venv/bin/python examples/make_tiny_pair.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.tiny_dflash import draft_config, draft_state, save_draft, save_tokenizer, target_config, tiny_target  # noqa: E402

OUT = ROOT / "examples" / "tiny-qwen3"


def main() -> None:
    settings = dict(vocab=64, hidden=32, layers=4)
    model = tiny_target(seed=0, **settings)
    model.save_pretrained(str(OUT / "target"), safe_serialization=True)
    save_tokenizer(OUT / "target", settings["vocab"])
    dcfg = draft_config(target_config(**settings), block_size=8, target_layer_ids=(0, 2))
    save_draft(OUT / "draft", dcfg, draft_state(dcfg, seed=100))
    sizes = {str(p.relative_to(OUT)): p.stat().st_size for p in sorted(OUT.rglob("*")) if p.is_file()}
    print(json.dumps(sizes, indent=1))


if __name__ == "__main__":
    main()
