"""The demo pair under a llama.cpp built here: converted with llama.cpp's own converter, served by
llama-server plain and with DFlash; then each llama.cpp rule's catch case, run for real.

    python benchmarks/bench_llamacpp_demo.py [--out results.json] [--cases all|none|DF801,...]

Writes one JSON document: conversion, losslessness (DFlash output vs the server's plain greedy
output, token for token), acceptance from llama-server's own /metrics, tokens/s, and per catch case
what llama.cpp did (load error, abort, batch errors, acceptance) next to what `dflash-check check`
said about that pair. docs/llamacpp.md reports a run of it. Needs the build (see BUILD_COMMAND in
llamacpp_harness.py), the `gguf` package, numpy, torch and transformers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llamacpp_harness as h  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo"
MAX_TOKENS = 64


def check(target: Path, draft: Path, *extra: str) -> dict[str, Any]:
    """`dflash-check check TARGET --draft DRAFT` (llama.cpp backend): exit code and llama.cpp codes found."""
    proc = subprocess.run([sys.executable, "-m", "dflash_compat", "check", str(target), "--draft", str(draft),
                           "--no-config", "-f", "json", *extra], capture_output=True, text=True, timeout=300)
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"exit": proc.returncode, "codes": [], "stderr": proc.stderr[-300:]}
    codes = sorted({f"{f['code']} {f['severity']}" for f in doc["findings"]})
    return {"exit": proc.returncode, "codes": codes}


def run_server(target: Path, draft: Optional[Path], prompts: list[list[int]], work: Path, *, n_max: int = 7,
               extra: tuple[str, ...] = (), max_tokens: int = MAX_TOKENS) -> dict[str, Any]:
    """Serve, send every prompt, read the counters; what happened, including a load error or an abort."""
    srv = h.start(target, draft, work, n_max=n_max, extra=extra)
    out: dict[str, Any] = {"argv": srv.argv[1:], "started": srv.alive()}
    outputs, seconds, errors, timings = [], 0.0, [], []
    try:
        if srv.alive():
            for ids in prompts:
                t0 = time.monotonic()
                res = h.complete(srv, ids, max_tokens)
                seconds += time.monotonic() - t0
                if "error" in res:
                    errors.append(res["error"])
                    if not srv.alive():
                        break
                    continue
                outputs.append(res.get("tokens"))
                timings.append(res.get("timings") or {})
            time.sleep(0.2)  # an abort after the last answer shows here
            if srv.alive():
                try:
                    out["metrics"] = h.metrics(srv)
                except OSError as exc:  # it died between the check and the read
                    errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        srv.stop()
    log = srv.log()
    tokens = sum(len(o or []) for o in outputs)
    out.update(outputs=outputs, errors=errors[:3], n_errors=len(errors), exit_code=srv.proc.returncode,
               tokens_per_s=tokens / seconds if seconds > 0 else 0.0,
               aborted="GGML_ASSERT" in log or (srv.proc.returncode not in (0, None, -15, 143) and bool(errors)),
               log_tail=[ln for ln in log.splitlines() if any(k in ln for k in (
                   "GGML_ASSERT", "error", "invalid token", "clamping", "block_size=", "exception",
                   "failed to load", "unsupported"))][-6:])
    m = out.get("metrics")
    if m and m["drafts"]:
        out["mean_acceptance"] = 1 + m["accepted"] / m["drafts"]
    return out


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--cases", default="all")
    ap.add_argument("--work", type=Path)
    args = ap.parse_args(argv)
    if not h.available():
        print(f"no llama-server build at {h.SERVER}; build it with:\n  {h.BUILD_COMMAND}", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="llamacpp-demo-"))
    work.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {"server": str(h.SERVER), "source": str(h.SRC)}

    t0 = time.monotonic()
    tgt, dft = work / "target.gguf", work / "draft.gguf"
    for model, out, tdir in ((DEMO / "target", tgt, None), (DEMO / "draft", dft, DEMO / "target")):
        proc = h.convert(model, out, target_dir=tdir)
        if proc.returncode != 0:
            print(proc.stderr[-2000:], file=sys.stderr)
            return 1
    doc["convert_seconds"] = round(time.monotonic() - t0, 1)
    doc["check_good_pair"] = check(tgt, dft)

    prompts = h.demo_prompts(DEMO / "target", DEMO / "prompts.txt")
    plain = run_server(tgt, None, prompts, work)
    spec = run_server(tgt, dft, prompts, work)
    same = [a == b for a, b in zip(plain["outputs"], spec["outputs"])]
    doc["plain"] = {k: plain[k] for k in ("tokens_per_s", "n_errors")}
    doc["dflash"] = {k: spec.get(k) for k in ("tokens_per_s", "n_errors", "metrics", "mean_acceptance", "log_tail")}
    doc["lossless"] = bool(same) and all(same) and len(same) == len(prompts)
    doc["outputs"] = {"plain": plain["outputs"], "dflash": spec["outputs"]}

    # a quantised draft KV cache (upstream #25725): no rule (a launch flag serve never prints), measured
    if args.cases in ("all", "ctkd"):
        q8 = run_server(tgt, dft, prompts, work, extra=("-ctkd", "q8_0", "-ctvd", "q8_0", "-fa", "on"))
        f16 = run_server(tgt, dft, prompts, work, extra=("-fa", "on"))
        doc["draft_kv_q8_0"] = {"mean_acceptance": q8.get("mean_acceptance"), "metrics": q8.get("metrics"),
                                "n_errors": q8["n_errors"], "lossless": q8["outputs"] == plain["outputs"],
                                "same_flags_f16_mean_acceptance": f16.get("mean_acceptance"),
                                "log_tail": q8.get("log_tail")}
    cases = _cases(work, tgt, dft)
    wanted = None if args.cases == "all" else set(args.cases.split(","))
    doc["cases"] = {}
    for code, (t, d, what, n_max) in cases.items():
        if args.cases == "none" or (wanted is not None and code not in wanted):
            continue
        res = run_server(t, d, prompts[:2], work, n_max=n_max)
        doc["cases"][code] = {"what": what, "check": check(t, d, "--spec-draft-n-max", str(n_max)),
                              **{k: res.get(k) for k in ("started", "aborted", "n_errors", "errors", "exit_code",
                                                         "metrics", "mean_acceptance", "log_tail")}}
    text = json.dumps(doc, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


def _cases(work: Path, tgt: Path, dft: Path) -> dict[str, tuple[Path, Path, str, int]]:
    """Each llama.cpp rule's catch case as a GGUF pair (the converted good pair, edited)."""
    import numpy as np

    w = work
    rw = h.rewrite
    return {
        "DF801": (rw(tgt, w / "t-qwen3vl.gguf", rename_arch="qwen3vl",
                     set_kv={"qwen3vl.rope.dimension_sections": [16, 8, 8, 0]}), dft,
                  "target architecture qwen3vl (same tensors as qwen3, no layer hook)", 7),
        "DF803-last": (tgt, rw(dft, w / "d-last.gguf", set_kv={"dflash.target_layers": [2, 6]}),
                       "target_layers [2, 6]: slot 6 = the last layer's output, on qwen3", 7),
        "DF803-past": (tgt, rw(dft, w / "d-past.gguf", set_kv={"dflash.target_layers": [2, 7]}),
                       "target_layers [2, 7]: past n_layer = 6", 7),
        "DF804": (tgt, rw(dft, w / "d-nolayers.gguf", delete=("dflash.target_layers",)),
                  "no dflash.target_layers", 7),
        "DF805": (tgt, rw(dft, w / "d-unshifted.gguf", set_kv={"dflash.target_layers": [1, 4]}),
                  "HF ids [1, 4] written without the + 1", 7),
        "DF806": (tgt, rw(dft, w / "d-noblock.gguf", delete=("dflash.block_size",)),
                  "no dflash.block_size (trained with 8), --spec-draft-n-max 15", 15),
        "DF807": (tgt, rw(dft, w / "d-nomask.gguf", delete=("tokenizer.ggml.mask_token_id",)),
                  "no tokenizer.ggml.mask_token_id", 7),
        "DF810": (tgt, rw(dft, w / "d-v2.gguf", add_tensors={
                      "selector_hidden.weight": np.zeros((8, 192), dtype=np.float32)}),
                  "a DFlash 2 selector tensor without the conv/selector keys", 7),
        "DF811": (tgt, rw(dft, w / "d-relu.gguf", set_kv={"dflash.hidden_activation": "relu"}),
                  "dflash.hidden_activation = relu", 7),
        "DF815": (tgt, dft, "--spec-draft-n-max 12 with block_size 8", 12),
        "DF812": (tgt, rw(dft, w / "d-vocab-reversed.gguf", set_kv={"tokenizer.ggml.tokens": _tokens(dft)[::-1]}),
                  "the draft's vocabulary reversed (same count)", 7),
    }


def _tokens(path: Path) -> list[str]:
    import gguf

    field = gguf.GGUFReader(str(path)).fields["tokenizer.ggml.tokens"]
    return [bytes(field.parts[i]).decode("utf-8") for i in field.data]


if __name__ == "__main__":
    sys.exit(main())
