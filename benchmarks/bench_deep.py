"""Wall time and peak RSS of `dflash-check` deep checks on full-size target configs, against the floor.

Each measurement is a fresh process (what a user runs), timed from outside; its peak RSS comes from
getrusage(RUSAGE_CHILDREN) in a one-child wrapper process, so the figures are per command.

    .venv/bin/python benchmarks/bench_deep.py            # 5 interleaved runs of every command
    .venv/bin/python benchmarks/bench_deep.py --runs 9 --json out.json

Best-of-N is the headline figure (what the code costs; noise from other processes only adds), the
median is printed beside it.

The floor is `python -c "import torch, transformers"` plus a bare meta-device `from_config` of the same
config in the same process: the least any transformers-based module check can cost.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "tests" / "fixtures" / "configs"
TARGETS = ("qwen3-8b", "llama-3.1-70b", "deepseek-v3", "qwen3.5-35b-a3b")
# Published parameter counts, for the "does not grow with size" comparison.
PARAMS_B = {"qwen3-8b": 8.2, "llama-3.1-70b": 70.6, "deepseek-v3": 671, "qwen3.5-35b-a3b": 35}

WRAPPER = """
import resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode
wall = time.perf_counter() - t
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)
"""

FLOOR_IMPORT = "import torch, transformers"
FLOOR_BUILD = """
import json, sys, torch, transformers
from transformers import AutoModelForCausalLM
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
raw = json.load(open(sys.argv[1]))
cfg = CONFIG_MAPPING[raw["model_type"]].from_dict(raw)
with torch.device("meta"):
    AutoModelForCausalLM.from_config(cfg)
"""


def measure(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, exit code) of one fresh process."""
    out = subprocess.run([sys.executable, "-c", WRAPPER, *argv], capture_output=True, text=True, check=True)
    wall, rss_kb, rc = out.stdout.split()
    return float(wall), int(rss_kb) / 1024, int(rc)


def _text_hidden(raw: dict) -> int:
    return (raw.get("text_config") or raw)["hidden_size"]


def _text_vocab(raw: dict) -> int:
    return (raw.get("text_config") or raw)["vocab_size"]


def write_draft(folder: Path, raw: dict) -> Path:
    """A 5-layer DFlash draft for this target: config plus a header-only (sparse) safetensors file."""
    h, vocab = _text_hidden(raw), _text_vocab(raw)
    n_layers = (raw.get("text_config") or raw)["num_hidden_layers"]
    ids = [1, n_layers // 4, n_layers // 2, 3 * n_layers // 4, n_layers - 3]
    cfg = {
        "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": h, "num_hidden_layers": 5,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3 * h,
        "vocab_size": vocab, "rms_norm_eps": 1e-6, "max_position_embeddings": 40960, "hidden_act": "silu",
        "block_size": 16, "num_target_layers": n_layers, "torch_dtype": "bfloat16",
        "dflash_config": {"mask_token_id": vocab - 1, "target_layer_ids": ids},
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg))
    shapes = {"fc.weight": [h, 5 * h], "hidden_norm.weight": [h], "norm.weight": [h]}
    for i in range(5):
        p = f"layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": [h], p + "post_attention_layernorm.weight": [h],
            p + "self_attn.q_proj.weight": [4096, h], p + "self_attn.k_proj.weight": [1024, h],
            p + "self_attn.v_proj.weight": [1024, h], p + "self_attn.o_proj.weight": [h, 4096],
            p + "self_attn.q_norm.weight": [128], p + "self_attn.k_norm.weight": [128],
            p + "mlp.gate_proj.weight": [3 * h, h], p + "mlp.up_proj.weight": [3 * h, h],
            p + "mlp.down_proj.weight": [h, 3 * h],
        })
    header, off = {}, 0
    for name, shape in shapes.items():
        n = 2
        for s in shape:
            n *= s
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + n]}
        off += n
    blob = json.dumps(header).encode()
    with open(folder / "model.safetensors", "wb") as fh:
        fh.write(len(blob).to_bytes(8, "little") + blob)
        fh.truncate(8 + len(blob) + off)  # sparse: the data section exists but is never written or read
    return folder


def summary(samples: list[tuple[float, float, int]]) -> dict[str, float]:
    walls = [w for w, _, _ in samples]
    return {"min_s": min(walls), "median_s": statistics.median(walls), "rss_mib": max(r for _, r, _ in samples)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    cli = [sys.executable, "-m", "dflash_compat.cli.app"]
    samples: dict[tuple[str, str], list] = {}
    with tempfile.TemporaryDirectory() as tmp:
        commands = {("import", "-"): [sys.executable, "-c", FLOOR_IMPORT]}
        for name in TARGETS:
            target = CONFIGS / name
            draft = write_draft(Path(tmp) / name, json.loads((target / "config.json").read_text()))
            commands[("floor", name)] = [sys.executable, "-c", FLOOR_BUILD, str(target / "config.json")]
            commands[("deep", name)] = [*cli, str(target), "--draft", str(draft), "-f", "json"]
            commands[("no-deep", name)] = [*cli, str(target), "--draft", str(draft), "-f", "json", "--no-deep"]
        # Interleaved rounds: a burst of load from elsewhere hits every command alike, not one of them.
        for _ in range(args.runs):
            for key, argv in commands.items():
                samples.setdefault(key, []).append(measure(argv))
    figures = {f"{k[0]}:{k[1]}": summary(v) for k, v in samples.items()}
    imp = figures["import:-"]
    print(f"python -c 'import torch, transformers': best {imp['min_s']:.2f} s, median {imp['median_s']:.2f} s, "
          f"{imp['rss_mib']:.0f} MiB  ({args.runs} interleaved runs)")
    print(f"{'target':16} {'params':>7} | {'deep best':>9} {'median':>7} {'RSS MiB':>8} | {'floor best':>10} "
          f"{'RSS MiB':>8} | {'ratio':>5} {'vs 8B':>6} | {'no-deep':>7}")
    base = figures["deep:qwen3-8b"]["min_s"]
    rows = []
    for name in TARGETS:
        d, f, n = figures[f"deep:{name}"], figures[f"floor:{name}"], figures[f"no-deep:{name}"]
        ratio = d["min_s"] / f["min_s"]
        rows.append({"target": name, "params_b": PARAMS_B[name], "deep": d, "floor": f, "no_deep": n,
                     "ratio": round(ratio, 2), "vs_8b": round(d["min_s"] / base, 2)})
        print(f"{name:16} {PARAMS_B[name]:>6}B | {d['min_s']:>9.2f} {d['median_s']:>7.2f} {d['rss_mib']:>8.0f} | "
              f"{f['min_s']:>10.2f} {f['rss_mib']:>8.0f} | {ratio:>5.2f} {d['min_s'] / base:>6.2f} | {n['min_s']:>7.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"import": imp, "rows": rows, "runs": args.runs,
                                               "when": time.strftime("%Y-%m-%d")}, indent=2))


if __name__ == "__main__":
    main()
