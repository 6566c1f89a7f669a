"""Rebuild examples/demo: a tiny Qwen3 target trained on the Python standard library's own sources,
and a DFlash draft for it trained with `dflash_compat.train`. Seeded, CPU only, offline.

    .venv/bin/python examples/demo/make_demo_pair.py --threads 1       # ~30 CPU-minutes, see docs/demo.md
    .venv/bin/python examples/demo/make_demo_pair.py --work /tmp/demo-work   # keep and reuse phases

Phases: (1) the corpus: every .py file of this Python's standard library (tests, codec tables and
pydoc topics left out), sorted; one file in ten (by a CRC of its path) is held out for evaluation.
(2) a byte-level BPE tokenizer trained on the training files (`tokenizers`), with <|endoftext|> as
EOS and a real <|mask|> token. (3) the target: Qwen3ForCausalLM, 6 layers, hidden 192, trained on
random windows of the training files, saved in bfloat16. (4) the draft's data: the target's own
greedy continuations of top-level `def` / `class` lines of the training files, the kind of prompt
the demo is measured on (what published recipes do: the draft learns what the target says, not
what the corpus says). (5) the draft: `init-draft` (1 layer, block 8, the target's <|mask|>),
trained with `dflash_compat.train`. (6) evaluation on held-out prompts (the first `def` / `class`
line of held-out files, never trained on): the lossless check, tau and speed-up of
`dflash-check smoke` with its defaults. Figures and phase times go to build.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shutil
import sys
import sysconfig
import tempfile
import time
import zlib
from contextlib import contextmanager
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
SKIP_PARTS = {"site-packages", "test", "tests", "idle_test", "encodings", "pydoc_data", "__pycache__"}
SEED = 0
VOCAB = 2048
TARGET = dict(hidden_size=192, intermediate_size=512, num_hidden_layers=6, num_attention_heads=3,
              num_key_value_heads=1, head_dim=64, max_position_embeddings=1024, rope_theta=10000.0,
              rms_norm_eps=1e-6, tie_word_embeddings=True)
TARGET_TRAIN = dict(steps=300, batch=16, seq_len=256, lr=3e-3, warmup=30, weight_decay=0.1)
REGEN = dict(sequences=2560, new_tokens=112, batch=128)
DRAFT = dict(layers=1, layer_ids=[1, 4], block_size=8)
DRAFT_TRAIN = dict(steps=600, batch_size=8, seq_len=128, anchors=64, lr=2e-3, warmup=30, eval_every=100,
                   checkpoint_every=0, eval_prompts=8, eval_new_tokens=64, held_out=0.05)
EVAL = dict(prompts=8, new_tokens=64)  # the smoke command's default, as the README runs it


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# (1) corpus and (2) tokenizer
# ---------------------------------------------------------------------------------------------


def stdlib_files() -> tuple[list[Path], list[Path]]:
    """(training files, held-out files) of the running Python's standard library, sorted."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if not SKIP_PARTS & set(p.relative_to(root).parts))
    held = [p for p in files if zlib.crc32(str(p.relative_to(root)).encode()) % 10 == 0]
    return [p for p in files if p not in held], held


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def train_tokenizer(texts: list[str], folder: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<|endoftext|>", "<|mask|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", mask_token="<|mask|>")
    fast.model_max_length = TARGET["max_position_embeddings"]
    fast.save_pretrained(str(folder))
    # transformers 5 names its own backend class here; the name every transformers release (and
    # so vLLM, SGLang and mlx-lm) knows loads the same tokenizer.json
    config_file = folder / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    config.pop("backend", None)
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_file.write_text(json.dumps(config, indent=2) + "\n")


def token_stream(texts: list[str], tokenizer) -> torch.Tensor:
    """All texts, tokenised, each followed by EOS, as one [N] tensor."""
    ids: list[int] = []
    for enc in tokenizer.backend_tokenizer.encode_batch(texts):
        ids += enc.ids + [tokenizer.eos_token_id]
    return torch.tensor(ids, dtype=torch.long)


# ---------------------------------------------------------------------------------------------
# (3) the target
# ---------------------------------------------------------------------------------------------


def new_target(tokenizer):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(SEED)
    config = Qwen3Config(vocab_size=len(tokenizer), eos_token_id=tokenizer.eos_token_id, bos_token_id=None,
                         pad_token_id=None, **TARGET)
    config._attn_implementation = "sdpa"
    return Qwen3ForCausalLM(config)


def train_target(model, stream: torch.Tensor, folder: Path) -> list[float]:
    c = TARGET_TRAIN
    opt = torch.optim.AdamW(model.parameters(), lr=c["lr"], betas=(0.9, 0.95), weight_decay=c["weight_decay"])
    gen = torch.Generator().manual_seed(SEED)
    losses = []
    model.train()
    for step in range(c["steps"]):
        warm = min(1.0, (step + 1) / c["warmup"])
        cosine = 0.5 * (1 + math.cos(math.pi * step / c["steps"]))
        for group in opt.param_groups:
            group["lr"] = c["lr"] * warm * (0.1 + 0.9 * cosine)
        starts = torch.randint(0, stream.numel() - c["seq_len"], (c["batch"],), generator=gen)
        x = torch.stack([stream[s:s + c["seq_len"]] for s in starts.tolist()])  # [B, T]
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        if (step + 1) % 50 == 0:
            log(f"target step {step + 1}/{c['steps']}  loss {sum(losses[-50:]) / 50:.3f}")
    save_target(model, folder)
    return losses


def save_target(model, folder: Path) -> None:
    from transformers import GenerationConfig

    model.eval()
    model.to(torch.bfloat16).save_pretrained(str(folder), safe_serialization=True)
    GenerationConfig(eos_token_id=model.config.eos_token_id, do_sample=False).save_pretrained(str(folder))


def load_target(folder: Path):
    """The saved (bfloat16) target, in float32: the model every later phase and the demo run."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()


# ---------------------------------------------------------------------------------------------
# (4) the draft's data: the target's own continuations
# ---------------------------------------------------------------------------------------------


def def_lines(files: list[Path]) -> list[str]:
    """Every top-level `def` / `class` line of `files` (16..80 characters, ending with ':'): the kind
    of line the held-out prompts are, taken from other files."""
    lines = []
    for path in files:
        lines += [ln.rstrip() for ln in read(path).splitlines() if ln.startswith(("def ", "class "))
                  and 16 <= len(ln.rstrip()) <= 80 and ln.rstrip().endswith(":")]
    return lines


@torch.no_grad()
def regenerate(model, tokenizer, prompts: list[str], out: Path) -> int:
    """The target's greedy continuations of `prompts` (REGEN["sequences"] of them, seeded choice), as
    JSONL token ids. Prompts of equal token length share a batch, so nothing needs padding."""
    c = REGEN
    chosen = sorted(random.Random(SEED + 1).sample(prompts, min(c["sequences"], len(prompts))))
    by_len: dict[int, list[list[int]]] = {}
    for ids in tokenizer(chosen, add_special_tokens=False)["input_ids"]:
        by_len.setdefault(len(ids), []).append(ids)
    rows, done = [], 0
    for length in sorted(by_len):
        group = by_len[length]
        for first in range(0, len(group), c["batch"]):
            batch = torch.tensor(group[first:first + c["batch"]])  # [b, length]
            full = model.generate(batch, attention_mask=torch.ones_like(batch), max_new_tokens=c["new_tokens"],
                                  min_new_tokens=c["new_tokens"], do_sample=False, pad_token_id=0)
            rows += full.tolist()
            done += batch.shape[0]
        log(f"regenerated {done}/{len(chosen)} sequences")
    out.write_text("\n".join(json.dumps({"ids": r}) for r in rows) + "\n")
    return len(rows)


def ids_to_jsonl(ids_file: Path, tokenizer, out: Path) -> None:
    """The trainer reads text; decoding the ids and re-tokenising them gives the same ids back
    for this byte-level BPE tokenizer on its own outputs almost always (checked in build.json)."""
    lines = [json.loads(line)["ids"] for line in ids_file.read_text().splitlines()]
    out.write_text("\n".join(json.dumps({"text": tokenizer.decode(r)}) for r in lines) + "\n")


# ---------------------------------------------------------------------------------------------
# (5) the draft, (6) evaluation
# ---------------------------------------------------------------------------------------------


def train_draft(target_dir: Path, data: Path, work: Path):
    from dflash_compat.init_draft import InitOptions, init_draft
    from dflash_compat.train import TrainConfig, train

    init = init_draft(str(target_dir), work / "draft-init", InitOptions(
        layers=DRAFT["layers"], layer_ids=DRAFT["layer_ids"], block_size=DRAFT["block_size"], weights="none",
        force=True))
    log(f"init-draft: mask token {init.mask.token_id} ({init.mask.reason})")
    config = TrainConfig(seed=SEED, device="cpu", **DRAFT_TRAIN)
    return train(str(target_dir), str(work / "draft-init"), str(data), str(work / "draft-trained"), config,
                 force=True, log=log)


def trained_draft(work: Path):
    """The figures of a draft already trained in `work` with today's settings, or None."""
    from dflash_compat.train import TrainConfig
    from dflash_compat.train.loop import TrainResult

    info = work / "draft-trained" / "training.json"
    if not (info.is_file() and (work / "draft-trained" / "model.safetensors").is_file()):
        return None
    saved = json.loads(info.read_text())
    if saved["config"] != TrainConfig(seed=SEED, device="cpu", **DRAFT_TRAIN).to_dict():
        return None
    taus = [h["tau"] for h in saved["history"] if h.get("tau") is not None]
    return TrainResult(work / "draft-trained", saved["history"][-1]["step"], saved["history"][-1]["loss"],
                       taus[-1] if taus else None, saved["history"], saved["seconds"])


def held_out_prompts(files: list[Path], train_files: list[Path], count: int) -> list[str]:
    """One-line prompts (smoke reads one per line): the first `def` / `class` line of held-out files
    that is not a line of any training file (`class Error(Exception):` is in eight of them), so
    neither the target nor the draft's data has seen the prompt."""
    seen = {line.strip() for path in train_files for line in read(path).splitlines()}
    prompts = []
    for path in files:
        for line in read(path).splitlines():
            if line.startswith(("def ", "class ")) and 16 <= len(line) <= 80 and line.rstrip().endswith(":"):
                if line.strip() not in seen:
                    prompts.append(line.rstrip())
                break
    random.Random(SEED).shuffle(prompts)
    return prompts[:count]


def evaluate(out: Path, prompts_file: Path) -> dict:
    """What the README's first command shows: `dflash-check smoke` on the held-out prompts."""
    from click.testing import CliRunner

    from dflash_compat.cli.app import cli

    res = CliRunner().invoke(cli, ["smoke", str(out / "target"), "--draft", str(out / "draft"), "--prompts-file",
                                   str(prompts_file), "--max-new-tokens", str(EVAL["new_tokens"]), "-f", "json"])
    if res.exit_code != 0:
        raise SystemExit(f"smoke failed ({res.exit_code}): {res.output}")
    return json.loads(res.output)["summary"]


class Phases:
    """Wall and CPU seconds of each phase (CPU time is what a quiet machine's wall time tracks). With
    --work they are kept in phases.json, so a rerun that reuses a finished phase reports the time of
    the run that did it, not the second it took to skip it."""

    def __init__(self, record: Path) -> None:
        self.record = record
        self.seconds: dict[str, dict[str, float]] = json.loads(record.read_text()) if record.is_file() else {}

    @contextmanager
    def __call__(self, name: str, reused: bool = False):
        wall, cpu = time.perf_counter(), time.process_time()
        yield
        if reused and name in self.seconds:
            log(f"{name}: reused from {self.record.parent}")
            return
        self.seconds[name] = {"wall": round(time.perf_counter() - wall, 1), "cpu": round(time.process_time() - cpu, 1)}
        self.record.write_text(json.dumps(self.seconds, indent=1) + "\n")
        log(f"{name}: {self.seconds[name]['wall']:.0f} s wall, {self.seconds[name]['cpu']:.0f} s CPU")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE, help="where target/ and draft/ go (default: examples/demo)")
    ap.add_argument("--work", type=Path, help="keep intermediate files here and reuse finished phases")
    ap.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    work = args.work or Path(tempfile.mkdtemp(prefix="dflash-demo-"))
    work.mkdir(parents=True, exist_ok=True)
    target_dir, phase = work / "target", Phases(work / "phases.json")
    have_target = (target_dir / "model.safetensors").is_file()
    train_files, held_files = stdlib_files()
    texts = [read(p) for p in train_files]
    log(f"corpus: {len(train_files)} training files, {len(held_files)} held out, {sum(map(len, texts)) / 1e6:.1f} MB")
    with phase("tokenizer", reused=have_target):
        if not have_target:
            train_tokenizer(texts, target_dir)
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(target_dir))
        stream = token_stream(texts, tokenizer)
    log(f"tokenizer: {len(tokenizer)} tokens, {stream.numel()} training tokens")
    losses: list[float] = []
    with phase("target", reused=have_target):
        if not have_target:
            losses = train_target(new_target(tokenizer), stream, target_dir)
            (work / "target-losses.json").write_text(json.dumps(losses))
        elif (work / "target-losses.json").is_file():
            losses = json.loads((work / "target-losses.json").read_text())
    have_data = (work / "draft-data.jsonl").is_file()
    with phase("regenerate", reused=have_data):
        if not have_data:
            regenerate(load_target(target_dir), tokenizer, def_lines(train_files), work / "draft-ids.jsonl")
            ids_to_jsonl(work / "draft-ids.jsonl", tokenizer, work / "draft-data.jsonl")
    result = trained_draft(work)
    with phase("draft", reused=result is not None):
        result = result or train_draft(target_dir, work / "draft-data.jsonl", work)
    with phase("evaluate"):
        publish(args.out, target_dir, work / "draft-trained", held_files, train_files)
        summary = evaluate(args.out, args.out / "prompts.txt")
    report(args.out, phase.seconds, losses, result, summary)


def publish(out: Path, target_dir: Path, draft_dir: Path, held_files: list[Path], train_files: list[Path]) -> None:
    """Copy just the files the demo needs into out/target and out/draft (no checkpoints)."""
    for name, src, files in (("target", target_dir, ("config.json", "generation_config.json", "model.safetensors",
                                                     "tokenizer.json", "tokenizer_config.json")),
                             ("draft", draft_dir, ("config.json", "model.safetensors"))):
        dest = out / name
        dest.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copy(src / f, dest / f)
    (out / "prompts.txt").write_text("\n".join(held_out_prompts(held_files, train_files, EVAL["prompts"])) + "\n")


def report(out: Path, seconds: dict, losses: list[float], result, summary: dict) -> None:
    sizes = {str(p.relative_to(out)): p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file()
             and p.suffix in (".json", ".safetensors", ".txt") and p.name != "build.json"}
    build = {
        "python": platform.python_version(), "torch": torch.__version__, "threads": torch.get_num_threads(),
        "load_average": [round(x, 2) for x in os.getloadavg()], "seconds": seconds,
        "total_s": {k: round(sum(v[k] for v in seconds.values()), 1) for k in ("wall", "cpu")},
        "target_loss_last50": round(sum(losses[-50:]) / len(losses[-50:]), 3) if losses else None,
        "draft": {"steps": result.steps, "loss": round(result.loss, 3), "held_out_tau": result.tau},
        "smoke": summary, "bytes": sizes, "total_bytes": sum(sizes.values()),
    }
    (out / "build.json").write_text(json.dumps(build, indent=1) + "\n")
    log(f"done in {build['total_s']['wall']:.0f} s ({build['total_s']['cpu']:.0f} s CPU): "
        f"tau {summary['mean_acceptance']:.2f}, speed-up {summary['speedup']:.2f}x, "
        f"lossless {summary['lossless']}, {build['total_bytes'] / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
