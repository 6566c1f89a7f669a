"""Peak memory of `dflash-check convert` on a ~1 GB synthetic z-lab draft, against its largest tensor.

Run: .venv/bin/python benchmarks/bench_convert.py [--hidden 4096] [--layers 2] [--keep]
Target (issue #11): peak RSS of the converting process at most ~2x the checkpoint's largest tensor.
The checkpoint is written sparsely (a real header, then `truncate`: its data reads as zeros and takes
no disk space); the converted copy is real bytes. Both live in a temporary folder, deleted at the end.
Each conversion runs in its own process, so ru_maxrss is that process's own peak; a process that only
imports the command gives the interpreter's floor. Results: docs/families.md, "convert".
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.deep_helpers import draft_tensors, write_safetensors  # noqa: E402

MIB = 1 << 20


def draft_config(hidden: int, layers: int) -> dict:
    return {
        "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": hidden,
        "num_hidden_layers": layers, "num_attention_heads": hidden // 128, "num_key_value_heads": hidden // 512,
        "head_dim": 128, "intermediate_size": 3 * hidden, "vocab_size": 151936, "rms_norm_eps": 1e-6,
        "max_position_embeddings": 40960, "hidden_act": "silu", "rope_theta": 1e6, "num_target_layers": 36,
        "block_size": 16, "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33]},
    }


def child_peak_rss(code: str) -> tuple[int, float]:
    """(peak RSS in bytes, seconds) of a fresh interpreter running `code`."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code + "\nimport resource, sys\n"
                          "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"],
                         check=True, capture_output=True, text=True, cwd=ROOT)
    return int(out.stdout.strip().splitlines()[-1]) * 1024, time.perf_counter() - start  # Linux: KiB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="Keep the temporary folder (prints its path).")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-convert-"))
    try:
        cfg = draft_config(args.hidden, args.layers)
        src = tmp / "src"
        src.mkdir()
        (src / "config.json").write_text(json.dumps(cfg))
        tensors = draft_tensors(cfg)
        write_safetensors(src / "model.safetensors", tensors, data="sparse")
        sizes = {n: 2 * _prod(s) for n, (_, s) in tensors.items()}
        largest = max(sizes, key=sizes.get)
        total = sum(sizes.values())
        floor, _ = child_peak_rss("import dflash_compat.cli.commands.convert, dflash_compat.convert.plan")
        code = (f"from pathlib import Path\nfrom dflash_compat.cli.commands.convert import convert_checkpoint\n"
                f"convert_checkpoint(Path({str(src)!r}), Path({str(tmp / 'out')!r}), 'speculators')")
        peak, seconds = child_peak_rss(code)
        written = (tmp / "out" / "model.safetensors").stat().st_size
        print(f"checkpoint: {len(tensors)} tensors, {total / MIB:.0f} MiB of data; largest {largest} "
              f"{sizes[largest] / MIB:.0f} MiB")
        print(f"interpreter + imports (floor): peak RSS {floor / MIB:.0f} MiB")
        print(f"convert --to speculators: peak RSS {peak / MIB:.0f} MiB "
              f"({peak / sizes[largest]:.2f}x the largest tensor; {(peak - floor) / MIB:.0f} MiB above the floor), "
              f"{seconds:.1f} s, {written / MIB:.0f} MiB written")
        verdict = "OK" if peak <= 2 * sizes[largest] else "OVER"
        print(f"target <= 2x largest tensor ({2 * sizes[largest] / MIB:.0f} MiB): {verdict}")
        if args.keep:
            print(f"kept {tmp}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def _prod(shape: list[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


if __name__ == "__main__":
    main()
