"""Zoo truth: the checker's verdict per backend against what each runtime really does, model type by model type.

For every causal-LM model type of the installed transformers that builds at a tiny size (benchmarks/zoo_models.py),
a tiny random target and a tiny draft in each runtime's own format are built (cached), then:

  transformers  transformers' own generate(..., assistant_model=ASSISTANT, speculation_type="dflash") with a
                Muse-Glimmer assistant, against the target's own greedy generate()
  dflash        the dflash reference (dflash 0.1.0, DFlashDraftModel.spec_generate) with a z-lab v1 draft,
                against greedy generate()
  mlx           the dflash MLX port (dflash.model_mlx.stream_generate) on mlx-lm's load of the same folder,
                with the z-lab draft, against mlx-lm's own greedy decoding (mlx-lm model types only)
  smoke         `dflash-check smoke` (our torch runtime, which mirrors `dflash`) with the z-lab draft

Each run is classified: lossless (identical to greedy) / refused (the engine raised a deliberate error: ValueError,
NotImplementedError, our one-line refusal) / crashed (any other exception) / not-lossless. Next to it, the
checker's verdict for that backend (smoke: the `dflash` verdict) on the same pair, deep checks on. Agreement:
pass <=> lossless. Results go to a JSON-lines file (resumable: a type already measured at this transformers
version is not run again) and the table to docs/zoo-truth.md (--write-docs).

    .venv/bin/python benchmarks/bench_zoo_truth.py --sample --jobs 2              # the CI sample (~12 types)
    .venv/bin/python benchmarks/bench_zoo_truth.py --jobs 1 --write-docs          # every type (slow)
    .venv/bin/python benchmarks/bench_zoo_truth.py --only zamba2,qwen3_next -v    # a few, errors shown
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

BACKENDS = ("transformers", "dflash", "mlx", "smoke")
PROMPT = [3, 17, 5, 42, 9, 11, 7, 29]
NEW_TOKENS = 16
OUTCOMES = ("lossless", "refused", "crashed", "not-lossless")
# What the engines raise on purpose when they will not run a pair (anything else is a crash).
VETTED = 2  # the version of _vet a cached build went through (an older one is vetted again)
_REFUSALS = ("ValueError", "NotImplementedError", "RuntimeUnsupportedError", "ConfigError", "InputError")


def transformers_version() -> str:
    try:
        return version("transformers")
    except PackageNotFoundError:
        return "none"


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:160]}" if text else type(exc).__name__


def _classify(exc: BaseException) -> str:
    return "refused" if type(exc).__name__ in _REFUSALS else "crashed"


# ---- building (cached per transformers version) ---------------------------------------------------------

def build(model_type: str, cache: Path) -> dict[str, Any]:
    """Target, z-lab draft and assistant for one type, built once per transformers version."""
    import zoo_models as z

    folder = cache / model_type
    marker = folder / "built.json"
    if marker.is_file():
        info = json.loads(marker.read_text())
        if info.get("vetted") == VETTED or (not info.get("built") and "vetted" in info):
            return info
        info = _vet(folder, info)
        marker.write_text(json.dumps(info))
        return info
    import warnings

    warnings.simplefilter("ignore")
    try:
        z.build_target(model_type, folder / "target")
        hidden, layers, vocab = z.text_sizes(folder / "target")
        theta = z.rope_theta(folder / "target")
        z.save_zlab_draft(folder / "zlab", hidden, layers, vocab, theta=theta)  # its embedding scale: _vet
        z.save_assistant_draft(folder / "assistant", hidden, layers, vocab, theta=theta)
        _tokenizer(folder / "target", vocab)
        info = _vet(folder, {"built": True, "hidden": hidden, "layers": layers, "vocab": vocab})
    except Exception as exc:  # noqa: BLE001 - a type that does not build at a tiny size is listed, not forced
        info = {"built": False, "error": _short(exc)}
    folder.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(info))
    return info


def _vet(folder: Path, info: dict[str, Any]) -> dict[str, Any]:
    """What running the built target shows: whether it decodes greedily at all at this size (a type whose tiny
    target cannot is listed as not built: there is no greedy output to compare a runtime with), and the scale
    its embedding module applies to the raw embedding rows (a scaled-embedding class: BioGPT, Gemma, ...),
    which the z-lab draft must mirror (input_embedding_scale, DF121/DF704) for the pair to be a correct one, like
    the soft-capping / logit scaling its config declares (final_logit_softcapping, output_multiplier)."""
    import torch
    import torch.nn.functional as F

    info = dict(info, vetted=VETTED)
    try:
        target = _load_target(folder / "target")
        _greedy(target, 2)
    except Exception as exc:  # noqa: BLE001
        return {"built": False, "vetted": VETTED, "error": "the tiny target fails plain greedy decoding: " + _short(exc)}
    cfg_path = folder / "zlab" / "config.json"
    draft_cfg = json.loads(cfg_path.read_text())
    mirror = draft_cfg.setdefault("dflash_config", {})
    text = target.config.get_text_config()
    cap, div = getattr(text, "final_logit_softcapping", None), getattr(text, "logits_scaling", None)
    if isinstance(cap, (int, float)) and cap > 0:  # what the target's forward does to its logits (DF121)
        mirror["final_logit_softcapping"] = float(cap)
    if isinstance(div, (int, float)) and div not in (0, 1):
        mirror["output_multiplier"] = 1.0 / float(div)
    emb = target.get_input_embeddings()
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        got, raw = emb(ids).float(), F.embedding(ids, emb.weight).float()
    mask = raw.abs() > 1e-6
    if bool(mask.any()):
        scale = float((got[mask] / raw[mask]).median())
        if abs(scale - 1.0) > 1e-3 and torch.allclose(got, raw * scale, rtol=1e-3, atol=1e-5):
            info["embed_scale"] = mirror["input_embedding_scale"] = scale
    cfg_path.write_text(json.dumps(draft_cfg, indent=2))
    return info


def _tokenizer(folder: Path, vocab: int) -> None:
    from dflash_compat.runtime.tiny_pair import save_tokenizer

    save_tokenizer(folder, vocab)


# ---- the runtimes -------------------------------------------------------------------------------------------

def _load_target(folder: Path):
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    # decode exactly NEW_TOKENS: no stop token (min_new_tokens would suppress EOS in the baseline only, which
    # the dflash reference, run without stop tokens, does not)
    model.generation_config.eos_token_id = None
    return model


def _greedy(model, n: int = NEW_TOKENS) -> list[int]:
    import torch

    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        # an explicit mask: generate() would otherwise mask every prompt token equal to pad_token_id
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False)
    return out[0, len(PROMPT):].tolist()


def _compare(got: list[int], want: list[int]) -> dict[str, Any]:
    n = min(len(got), len(want))
    if got[:n] == want[:n] and n:
        return {"outcome": "lossless"}
    first = next((i for i in range(n) if got[i] != want[i]), n)
    return {"outcome": "not-lossless", "detail": f"differs from greedy at token {first}"}


def run_transformers(folder: Path) -> dict[str, Any]:
    import torch
    from transformers import AutoModel

    target = _load_target(folder / "target")
    try:
        want = _greedy(target)
    except Exception as exc:  # noqa: BLE001
        return {"outcome": _classify(exc), "detail": "plain generate: " + _short(exc)}
    assistant = AutoModel.from_pretrained(str(folder / "assistant"), dtype=torch.float32).eval()
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        out = target.generate(ids, attention_mask=torch.ones_like(ids), assistant_model=assistant,
                              speculation_type="dflash", max_new_tokens=NEW_TOKENS,
                              do_sample=False)
    first = _compare(out[0, len(PROMPT):].tolist(), want)
    if first["outcome"] != "lossless":
        return first
    # A random tiny draft is rejected at its first token; a trained one is accepted in part. The partial case
    # (accept j of the block, roll the rest back) is what tests a recurrent rollback: replay it with the draft's
    # blocks rewritten to agree with greedy for j = 0, 1, 2, ... tokens, then disagree.
    with torch.no_grad():
        partial = _compare(_partially_accepted(target, assistant, want), want)
    if partial["outcome"] != "lossless":
        partial["detail"] = "with partial acceptance: " + partial.get("detail", "")
    return partial


def _partially_accepted(target, assistant, want: list[int]) -> list[int]:
    """transformers' native DFlash generation with each draft block's first j tokens replaced by the greedy
    continuation (j cycling 0 .. block) and the next one made wrong: verification then accepts exactly j."""
    import torch
    from transformers.generation import candidate_generator as cg

    original = cg.DFlashTokenCandidateGenerator.get_candidates
    state = {"step": 0}
    vocab = int(target.get_output_embeddings().weight.shape[0])

    def get_candidates(self, input_ids, *args, **kwargs):
        cand, logits = original(self, input_ids, *args, **kwargs)
        n_new = cand.shape[1] - input_ids.shape[1]
        if n_new <= 0:
            return cand, logits
        done = input_ids.shape[1] - len(PROMPT)
        j = state["step"] % (n_new + 1)
        state["step"] += 1
        block = want[done:done + n_new] + [0] * n_new
        tokens = block[:n_new] if j == n_new else (
            block[:j] + [(block[j] + 1) % vocab] + cand[0, input_ids.shape[1] + j + 1:].tolist())
        return torch.cat([input_ids, torch.tensor([tokens[:n_new]], dtype=cand.dtype)], dim=1), logits

    cg.DFlashTokenCandidateGenerator.get_candidates = get_candidates
    try:
        ids = torch.tensor([PROMPT])
        out = target.generate(ids, attention_mask=torch.ones_like(ids), assistant_model=assistant, speculation_type="dflash",
                              max_new_tokens=NEW_TOKENS, do_sample=False)
    finally:
        cg.DFlashTokenCandidateGenerator.get_candidates = original
    return out[0, len(PROMPT):].tolist()


def run_dflash(folder: Path) -> dict[str, Any]:
    import torch
    from dflash.model import DFlashDraftModel

    target = _load_target(folder / "target")
    try:
        want = _greedy(target)
    except Exception as exc:  # noqa: BLE001
        return {"outcome": _classify(exc), "detail": "plain generate: " + _short(exc)}
    draft = DFlashDraftModel.from_pretrained(str(folder / "zlab"), dtype=torch.float32).eval()
    with torch.no_grad():
        out = draft.spec_generate(target, torch.tensor([PROMPT]), max_new_tokens=NEW_TOKENS, stop_token_ids=[])
    out = out[0] if isinstance(out, tuple) else out
    return _compare(out[0, len(PROMPT):].tolist(), want)


def mlx_conversion(folder: Path) -> Path:
    """The target as mlx-lm reads it: the same weights, the config with transformers 5's rope_parameters
    also spelled at the top level (rope_theta, partial_rotary_factor), where mlx-lm's ModelArgs look."""
    out = folder / "mlx"
    if (out / "config.json").is_file():
        return out
    out.mkdir(exist_ok=True)
    cfg = json.loads((folder / "target" / "config.json").read_text())
    for scope in (cfg, cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else {}):
        rope = scope.get("rope_parameters") if isinstance(scope.get("rope_parameters"), dict) else {}
        for key in ("rope_theta", "partial_rotary_factor"):
            if key in rope and key not in scope:
                scope[key] = rope[key]
        if rope.get("rope_type") not in (None, "default") and "rope_scaling" not in scope:
            scope["rope_scaling"] = rope
        if "n_positions" in scope and "n_ctx" not in scope:  # GPT-2: transformers 5 dropped n_ctx
            scope["n_ctx"] = scope["n_positions"]
    for item in (folder / "target").iterdir():
        if item.name != "config.json" and not (out / item.name).exists():
            (out / item.name).symlink_to(item.resolve())
    (out / "config.json").write_text(json.dumps(cfg))
    return out


def run_mlx(folder: Path) -> dict[str, Any]:
    import mlx.core as mx
    from dflash import model_mlx
    from mlx_lm.generate import generate_step
    from mlx_lm.utils import load as mlx_load

    try:
        model, tok = mlx_load(str(mlx_conversion(folder)))
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - not an mlx-lm type (mlx-lm's olmo exits the process
        # when the ai2-olmo package is missing: mlx_lm/models/olmo.py)
        return {"outcome": "n/a", "detail": "mlx-lm cannot load it: " + _short(exc)}
    want = [int(t) for t, _ in generate_step(mx.array(PROMPT), model, max_tokens=NEW_TOKENS,
                                             sampler=lambda x: mx.argmax(x, axis=-1))]
    model_mlx.snapshot_download = lambda *a, **k: str(folder / "zlab")  # a local folder, never the Hub
    draft = model_mlx.load_draft(str(folder / "zlab"))
    steps = list(model_mlx.stream_generate(model, draft, tok, mx.array(PROMPT), max_tokens=NEW_TOKENS))
    got = [int(t) for s in steps for t in s.tokens]
    return _compare(got, want)


def run_smoke(folder: Path, in_process: bool = True) -> dict[str, Any]:
    """`dflash-check smoke` on the pair, as a user runs it: in this (case) process through click's test runner,
    which saves a second torch import per type, or (in_process=False) as a subprocess."""
    args = ["smoke", str(folder / "target"), "--draft", str(folder / "zlab"),
            "--prompt-ids", ",".join(map(str, PROMPT)), "--max-new-tokens", str(NEW_TOKENS), "--device", "cpu",
            "--format", "json"]
    if in_process:
        from click.testing import CliRunner

        from dflash_compat.cli.app import cli

        res = CliRunner().invoke(cli, args, prog_name="dflash-check")
        code, stderr = res.exit_code, res.stderr
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            return {"outcome": "crashed", "detail": _short(res.exception)}
    else:
        proc = subprocess.run([sys.executable, "-m", "dflash_compat", *args], capture_output=True, text=True,
                              timeout=600)
        code, stderr = proc.returncode, proc.stderr
    err = stderr.strip().splitlines()
    if "Traceback (most recent call last)" in stderr:
        return {"outcome": "crashed", "detail": (err[-1] if err else "")[:200]}
    if code == 0:
        return {"outcome": "lossless"}
    if code == 1:
        return {"outcome": "not-lossless", "detail": (err[-1] if err else "")[:200]}
    if code == 2 and err and err[-1].startswith("dflash-check: error:"):
        return {"outcome": "refused", "detail": err[-1][len("dflash-check: error: "):][:200]}
    return {"outcome": "crashed", "detail": (err[-1] if err else f"exit {code}")[:200]}


RUNNERS = {"transformers": run_transformers, "dflash": run_dflash, "mlx": run_mlx, "smoke": run_smoke}


# ---- the checker's verdict ----------------------------------------------------------------------------------

def verdict(folder: Path, backend: str) -> dict[str, Any]:
    """The checker's verdict for the backend (smoke answers to `dflash`) on the pair that backend runs."""
    from dflash_compat.pipeline.check import CheckRequest, run_check

    checked = {"smoke": "dflash"}.get(backend, backend)
    draft = folder / ("assistant" if backend == "transformers" else "zlab")
    framework = "mlx" if backend == "mlx" else "torch"
    target = folder / ("mlx" if backend == "mlx" else "target")
    try:
        report = run_check(CheckRequest(target=str(target), draft=str(draft), backends=(checked,),
                                        framework=framework))
    except Exception as exc:  # noqa: BLE001 - the checker refusing its input is a verdict too
        return {"verdict": "fail", "why": _short(exc)}
    v = report.summary.verdict[checked]
    errors = [f for f in report.findings if f.severity == "error" and f.backend in (checked, "common")]
    return {"verdict": "fail" if v == "fail" else "pass",
            "why": "; ".join(f"{f.code} {f.message[:120]}" for f in errors[:2])}


# ---- one type, in its own process ---------------------------------------------------------------------------

def case(model_type: str, backends: list[str], cache: Path) -> dict[str, Any]:
    import warnings

    warnings.simplefilter("ignore")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    info = build(model_type, cache)
    out: dict[str, Any] = {"type": model_type, "transformers_version": transformers_version(),
                           "built": info["built"]}
    if not info["built"]:
        out["error"] = info["error"]
        return out
    folder = cache / model_type
    for backend in backends:
        t0 = time.time()
        try:
            ran = RUNNERS[backend](folder)
        except Exception as exc:  # noqa: BLE001 - the engine's failure is the measurement
            ran = {"outcome": _classify(exc), "detail": _short(exc),
                   "where": traceback.extract_tb(exc.__traceback__)[-1].filename.split("site-packages/")[-1]}
        ran["seconds"] = round(time.time() - t0, 1)
        if ran["outcome"] != "n/a":
            ran.update(verdict(folder, backend))
        out[backend] = ran
    return out


def agrees(row: dict[str, Any]) -> Optional[bool]:
    if row.get("outcome") in (None, "n/a") or "verdict" not in row:
        return None
    return (row["verdict"] == "pass") == (row["outcome"] == "lossless")


# ---- driver -------------------------------------------------------------------------------------------------

def _done(results: Path, tv: str) -> dict[str, dict[str, Any]]:
    found = {}
    if results.is_file():
        for line in results.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if row.get("transformers_version") == tv:
                found[row["type"]] = row
    return found


def _one(model_type: str, backends: list[str], cache: Path, timeout: int) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--case", model_type, "--backends", ",".join(backends),
           "--cache", str(cache)]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"type": model_type, "transformers_version": transformers_version(), "built": None,
                "error": f"timed out after {timeout}s"}
    last = proc.stdout.strip().splitlines()[-1:] if proc.stdout.strip() else []
    try:
        return json.loads(last[0])
    except (IndexError, json.JSONDecodeError):
        tail = " ".join(proc.stderr.strip().splitlines()[-1:])[:200]
        return {"type": model_type, "transformers_version": transformers_version(), "built": None,
                "error": f"the case process failed (exit {proc.returncode}): {tail}"}


def measure(types: list[str], backends: list[str], cache: Path, results: Path, jobs: int, timeout: int,
            progress: bool = True) -> dict[str, dict[str, Any]]:
    tv = transformers_version()
    done = _done(results, tv)
    todo = [t for t in types if t not in done]
    results.parent.mkdir(parents=True, exist_ok=True)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not progress, transient=False) as bar:
        task = bar.add_task(f"zoo @ transformers {tv}", total=len(todo))
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(_one, t, backends, cache, timeout): t for t in todo}
            for fut in as_completed(futures):
                row = fut.result()
                done[row["type"]] = row
                with results.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
                bar.update(task, advance=1, description=f"zoo @ transformers {tv}: {row['type']}")
    return {t: done[t] for t in types if t in done}


def table(rows: dict[str, dict[str, Any]], backends: list[str], tv: str) -> str:
    """The markdown section for one transformers version: agreement per backend, then every disagreement."""
    built = [r for r in rows.values() if r.get("built")]
    lines = [f"### transformers {tv}", "",
             f"{len(rows)} model types tried, {len(built)} built at a tiny size.", "",
             "| backend | judged | agree | lossless | refused | crashed | not lossless | disagreements |",
             "|---|---|---|---|---|---|---|---|"]
    for b in backends:
        judged = [r[b] for r in built if b in r and agrees(r[b]) is not None]
        n_agree = sum(1 for x in judged if agrees(x))
        counts = {o: sum(1 for x in judged if x["outcome"] == o) for o in OUTCOMES}
        pct = f"{100 * n_agree / len(judged):.0f}%" if judged else "-"
        lines.append(f"| {b} | {len(judged)} | {n_agree} ({pct}) | {counts['lossless']} | {counts['refused']} | "
                     f"{counts['crashed']} | {counts['not-lossless']} | {len(judged) - n_agree} |")
    disagreeing = []
    for t, r in sorted(rows.items()):
        for b in backends:
            x = r.get(b)
            if x and agrees(x) is False:
                ran = x["outcome"] + (f" ({x['detail']})" if x.get("detail") else "")
                disagreeing.append(f"| {t} | {b} | {ran.replace('|', '/')} | {x['verdict']} "
                                   f"{('(' + x['why'] + ')') if x.get('why') else ''} | |".replace("||", "|"))
    if disagreeing:
        lines += ["", "| model type | backend | ran | checker | cause |", "|---|---|---|---|---|", *disagreeing]
    else:
        lines += ["", "No disagreements."]
    not_built = sorted(t for t, r in rows.items() if not r.get("built"))
    if not_built:
        def why(t: str) -> str:
            text = " ".join(str(rows[t].get("error") or "").split()).replace("|", "/")
            return f" ({text[:90]})" if text else ""
        lines += ["", f"Not built at a tiny size ({len(not_built)}): " + "; ".join(f"`{t}`{why(t)}" for t in not_built)]
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated model types")
    ap.add_argument("--sample", action="store_true", help="the CI sample (zoo_models.SAMPLE)")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=600, help="seconds per model type")
    ap.add_argument("--cache", type=Path, default=None, help="where tiny models are built (default .zoo-cache/)")
    ap.add_argument("--results", type=Path, default=None, help="JSON lines (default .zoo-cache/results.jsonl)")
    ap.add_argument("--write-docs", type=Path, nargs="?", const=ROOT / "docs" / "zoo-truth.md", default=None)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    tv = transformers_version()
    base = Path(os.environ.get("DFLASH_ZOO_CACHE", ROOT / ".zoo-cache"))
    cache = args.cache or base / f"transformers-{tv}"
    backends = [b for b in args.backends.split(",") if b]
    if args.case:
        print(json.dumps(case(args.case, backends, cache)))
        return 0
    import zoo_models as z

    types = z.causal_lm_types()
    if args.only:
        types = [t for t in args.only.split(",") if t]
    elif args.sample:
        types = [t for t in z.SAMPLE if t in types]
    results = args.results or base / "results.jsonl"
    rows = measure(types, backends, cache, results, args.jobs, args.timeout, progress=not args.no_progress)
    text = table(rows, backends, tv)
    print(text)
    if args.write_docs:
        _write_section(args.write_docs, tv, text)
    return 0


def _write_section(path: Path, tv: str, section: str) -> None:
    """Replace (or add) this transformers version's section of docs/zoo-truth.md."""
    start, end = f"<!-- zoo:{tv}:start -->", f"<!-- zoo:{tv}:end -->"
    text = path.read_text() if path.is_file() else "# Zoo truth\n"
    block = f"{start}\n{section}{end}"
    if start in text and end in text:
        text = text.split(start)[0] + block + text.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
