"""`dflash-check smoke`: run DFlash end to end on a few prompts; check losslessness, acceptance and speed-up."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import click

from dflash_compat.cli.commands.smoke_preflight import ACCEPTANCE_ONLY, preflight, refusal_line
from dflash_compat.exceptions import (
    EXIT_FAIL,
    EXIT_INPUT,
    EXIT_OK,
    DFlashCompatError,
    InputError,
    MissingDependencyError,
    RuntimeUnsupportedError,
    one_line,
)
from dflash_compat.inputs import FiniteFloatRange, SeedRange, check_texts
from dflash_compat.runtime.core import (
    ATTENTION_CHOICES,
    CACHE_KINDS,
    GREEDY,
    Sampling,
    check_block_size,
    check_token_ids,
    classify_divergence,
    first_difference,
    verdict_of,
)

__all__ = ["smoke_cmd", "SmokeRequest", "SmokeRun", "PromptRun", "build_payload", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
DEFAULT_PROMPT = "Write a short story about a robot who learns to paint."
MAX_PROMPTS_BYTES = 16 * 1024 * 1024
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "tiktoken.model")


@dataclass
class SmokeRequest:
    """Everything a backend needs to run the smoke test (plain data, no framework objects)."""

    target: str
    draft: str
    texts: list[str] = field(default_factory=list)
    prompt_ids: list[list[int]] = field(default_factory=list)
    max_new_tokens: int = 64
    block_size: Optional[int] = None
    sampling: Sampling = GREEDY
    device: str = "auto"
    dtype: str = "auto"
    trust_remote_code: bool = False
    token: Optional[str] = None
    adapter: Optional[str] = None  # --adapter FILE_OR_NAME (None: chosen by model_type)
    # --profile-out: also time speculative steps at this shorter block size, for the cost model
    profile_block_size: Optional[int] = None
    threads: Optional[int] = None  # --threads N (torch; None: chosen by runtime/threads.py)
    attention: str = "auto"  # --attention: the SDPA kernels torch may use (runtime/torch_attention.py)
    cache: str = "dynamic"  # --cache dynamic|static (target and draft)
    recheck: bool = False  # --recheck: rerun a differing prompt alone in float32
    graphs: bool = False  # --cuda-graphs: CUDA graphs of the target's verify block (static cache, CUDA)


@dataclass
class PromptRun:
    """One prompt: its ids, the speculative result and the plain greedy baseline (GenerationResult)."""

    prompt_tokens: list[int]
    spec: Any
    baseline: Any
    short: Any = None  # the speculative run at SmokeRequest.profile_block_size, when asked for
    generate: Any = None  # transformers' generate() on the same prompt (torch), as users decode
    divergence: Optional[dict] = None  # greedy output differs: the first difference, its margins, the verdict
    recheck: Optional[dict] = None  # --recheck: the prompt rerun alone in float32


@dataclass
class SmokeRun:
    backend: str
    device: str
    dtype: str
    block_size: int
    prompts: list[PromptRun]


# ---------------------------------------------------------------------------------------------
# backends
# ---------------------------------------------------------------------------------------------


def _run_backend(backend: str, req: SmokeRequest, step: Callable[[], None], total: Callable[[int], None]) -> SmokeRun:
    """Dispatch to a runtime. Each branch loads target + draft, then runs spec and baseline per prompt."""
    if backend == "torch":
        return _run_torch(req, step, total)
    if backend == "mlx":
        return _run_mlx(req, step, total)
    raise InputError(f"unknown backend {backend!r}")  # pragma: no cover - click validates


def _run_mlx(req: SmokeRequest, step: Callable[[], None], total: Callable[[int], None]) -> SmokeRun:
    from dflash_compat.cli.commands.smoke_mlx import run_mlx

    # the shared protocol is handed over, so that smoke_mlx never imports this module (no import circle)
    return run_mlx(req, step, total, tokenize=_tokenize, run_prompts=run_prompts, make_run=SmokeRun)


def _tokenize(folder: Path, texts: list[str], target: str) -> list[list[int]]:
    if not texts:
        return []
    if not any((folder / name).is_file() for name in _TOKENIZER_FILES):
        raise InputError(
            f"target {target} has no tokenizer, so text prompts cannot be encoded; pass --prompt-ids 1,2,3")
    from dflash_compat.files.safe_read import check_tokenizer_files

    check_tokenizer_files(folder, f"target {target}")  # bounded, typed JSON before transformers parses it
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(folder))
    except Exception as exc:  # noqa: BLE001 - a foreign parser on an untrusted file (tokenizers raises bare Exception)
        raise InputError(f"target {target}: cannot load its tokenizer ({one_line(exc)}); pass --prompt-ids") from None
    encoded = [list(tokenizer(t)["input_ids"]) for t in texts]
    empty = [i for i, ids in enumerate(encoded) if not ids]
    if empty:
        raise InputError(f"prompt {empty[0]} encodes to no tokens")
    return encoded


def _torch_device_dtype(device: str, dtype: str):
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA GPU is available to this torch build")
    if dtype == "auto":
        dtype = "bfloat16" if device == "cuda" else "float32"
    return device, dtype, getattr(torch, dtype)


def _set_threads(target, draft, requested: Optional[int]) -> None:
    """Intra-op threads for a CPU run: few for small models, never more than the free cores
    (runtime/threads.py); --threads or OMP_NUM_THREADS / MKL_NUM_THREADS win."""
    import torch

    from dflash_compat.runtime.threads import choose_threads

    params = sum(p.numel() for p in target.model.parameters()) + sum(p.numel() for p in draft.parameters())
    choice = choose_threads(params, torch.get_num_threads(), requested=requested)
    if choice.threads is not None:
        torch.set_num_threads(choice.threads)


def run_prompts(rt, draft, target, prompts: list[list[int]], req: "SmokeRequest", step: Callable[[], None],
                total: Callable[[int], None]) -> tuple[int, list["PromptRun"]]:
    """The protocol both backends share: validate the block size and the prompt ids, warm up once,
    then per prompt a speculative run and a plain greedy baseline. `rt` is torch_generate or
    mlx_generate (same function names)."""
    bs = check_block_size(req.block_size, draft.block_size, "--block-size")
    for i, ids in enumerate(prompts):
        check_token_ids(ids, target.vocab_size, f"prompt {i}")
    stops = rt.stop_tokens_of(target)
    kernels = dict(attention=req.attention, cache=req.cache)
    spec = dict(block_size=bs, stop_token_ids=stops, sampling=req.sampling, graphs=req.graphs, **kernels)
    plain = dict(stop_token_ids=stops, **kernels)
    total(2 * len(prompts))
    # warm-up: first calls pay for lazy initialisation (CUDA kernel selection, MLX compilation)
    warm = min(8, req.max_new_tokens)
    try:  # the target alone first: a target that cannot decode greedily is not a DFlash question
        rt.greedy_generate(target, prompts[0], max_new_tokens=warm, graphs=req.graphs, **plain)
    except DFlashCompatError:
        raise
    except Exception as exc:  # noqa: BLE001 - the target's own forward, not our code
        raise RuntimeUnsupportedError(
            f"the target fails plain greedy decoding on its own ({one_line(exc)}); DFlash cannot be judged "
            "on it: fix the target (or its adapter) first") from exc
    rt.spec_generate(draft, target, prompts[0], max_new_tokens=warm, **spec)
    rt.generate_baseline(target, prompts[0], max_new_tokens=warm, **plain)
    runs = []
    for ids in prompts:
        result = rt.spec_generate(draft, target, ids, max_new_tokens=req.max_new_tokens, **spec)
        step()
        base = rt.greedy_generate(target, ids, max_new_tokens=req.max_new_tokens, graphs=req.graphs, **plain)
        step()
        gen = rt.generate_baseline(target, ids, max_new_tokens=req.max_new_tokens, **plain)
        short = None
        if req.profile_block_size is not None and req.profile_block_size < bs:
            short = rt.spec_generate(draft, target, ids, max_new_tokens=req.max_new_tokens,
                                     **{**spec, "block_size": req.profile_block_size})
        run = PromptRun(ids, result, base, short, gen)
        if req.sampling.greedy:
            run.divergence = measure_divergence(rt, draft, target, run, req.attention, target_dtype_name(target))
        runs.append(run)
    return bs, runs


def target_dtype_name(target: Any) -> str:
    """'bfloat16', 'float32', ... from the target's dtype (torch.bfloat16 / mlx.core.bfloat16)."""
    return str(getattr(target, "dtype", "float32")).rsplit(".", 1)[-1]


def measure_divergence(rt, draft, target, run: PromptRun, attention: str, dtype: str) -> Optional[dict]:
    """Where greedy speculative output and the baseline first differ, the target's logits there, in a
    block forward and a one-token forward (rt.divergence_margins), and the verdict: near-tie or differs."""
    spec, base = run.spec.tokens, run.baseline.tokens
    index = first_difference(spec, base)
    if index is None:
        return None
    a = spec[index] if index < len(spec) else None
    b = base[index] if index < len(base) else None
    margins = None
    if a is not None and b is not None:
        margins = rt.divergence_margins(draft, target, run.prompt_tokens, spec, index, run.spec.stats, a, b,
                                        attention=attention)
    return classify_divergence(index, a, b, margins, dtype)


def _run_torch(req: SmokeRequest, step: Callable[[], None], total: Callable[[int], None]) -> SmokeRun:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        raise MissingDependencyError(
            "the torch backend needs torch and transformers: pip install 'dflash-compat[torch]'") from None
    from dflash_compat.runtime import torch_generate as rt
    from dflash_compat.runtime.checkpoints import target_folder

    transformers.utils.logging.disable_progress_bar()  # ours is on stderr already
    device, dtype_name, dtype = _torch_device_dtype(req.device, req.dtype)
    folder = target_folder(req.target, token=req.token, trust_remote_code=req.trust_remote_code)
    prompts = _tokenize(folder, req.texts, req.target) + [list(p) for p in req.prompt_ids]
    target = rt.load_target(folder, device=device, dtype=dtype, trust_remote_code=req.trust_remote_code,
                            adapter=req.adapter)
    draft = rt.load_draft(req.draft, device=device, dtype=dtype, token=req.token)
    if device == "cpu" or req.threads is not None:
        _set_threads(target, draft, req.threads)
    bs, runs = run_prompts(rt, draft, target, prompts, req, step, total)
    if req.recheck and any(r.divergence for r in runs):
        _recheck_float32(rt, req, folder, runs, target, draft, dtype_name, bs)
    return SmokeRun("torch", device, dtype_name, bs, runs)


def _recheck_float32(rt, req: SmokeRequest, folder, runs: list[PromptRun], target, draft, dtype_name: str,
                     bs: int) -> None:
    """--recheck: each differing prompt rerun alone in float32 (speculative and greedy, same kernels and
    cache), when the float32 weights fit next to what is loaded; the result goes on the prompt's run."""
    import torch

    differing = [r for r in runs if r.divergence]
    if dtype_name == "float32":
        for r in differing:
            r.recheck = {"dtype": "float32", "skipped": "the run was float32 already"}
        return
    params = sum(p.numel() for p in target.model.parameters()) + sum(p.numel() for p in draft.parameters())
    need = 4 * params
    free = _free_bytes(target.device)
    if free is not None and need > free:
        for r in differing:
            r.recheck = {"dtype": "float32",
                         "skipped": f"needs {need / 1e9:.1f} GB in float32, {free / 1e9:.1f} GB free"}
        return
    device = target.device
    t32 = rt.load_target(folder, device=device, dtype=torch.float32, trust_remote_code=req.trust_remote_code,
                         adapter=req.adapter)
    d32 = rt.load_draft(req.draft, device=device, dtype=torch.float32, token=req.token)
    stops = rt.stop_tokens_of(t32)
    for r in differing:
        kw = dict(max_new_tokens=req.max_new_tokens, stop_token_ids=stops, attention=req.attention, cache=req.cache)
        spec = rt.spec_generate(d32, t32, r.prompt_tokens, block_size=bs, **kw)
        base = rt.greedy_generate(t32, r.prompt_tokens, **kw)
        index = first_difference(spec.tokens, base.tokens)
        r.recheck = {"dtype": "float32", "lossless": index is None, "differs_at": index,
                     "mean_acceptance": float(spec.stats.tau)}
    del t32, d32


def _free_bytes(device) -> Optional[int]:
    """Free memory where the float32 copy would go: the GPU's, or the machine's available memory."""
    try:
        if device.type == "cuda":
            import torch

            return int(torch.cuda.mem_get_info(device)[0])
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, RuntimeError):
        return None
    return None


# ---------------------------------------------------------------------------------------------
# the report (plain data)
# ---------------------------------------------------------------------------------------------


def _rate(tokens: int, seconds: float) -> float:
    return tokens / seconds if seconds > 0 else 0.0


def build_payload(run: SmokeRun, temperature: float, strict: bool = False) -> dict[str, Any]:
    """The JSON report. `lossless` is true where the speculative output is token-identical to greedy
    decoding, null with temperature > 0 (sampled outputs are random, not comparable token for token).
    `verdict` (greedy): lossless, near-tie (the first difference is a near-tie of the target's top
    two logits, within the dtype's rounding: numbers in `divergence`) or differs (a bug). `speedup`
    is against the faster of the two baselines users would run: our greedy loop and transformers'
    generate() (same dtype, kernels and cache); `runtime` names what ran."""
    from dflash_compat.runtime.stats import histogram, mean_acceptance

    greedy = temperature <= 0
    results, lengths = [], []
    spec_tokens = spec_s = base_tokens = base_s = gen_tokens = gen_s = 0.0
    have_generate = bool(run.prompts) and all(p.generate is not None for p in run.prompts)
    for i, p in enumerate(run.prompts):
        s, b = p.spec.stats, p.baseline.stats
        lengths += s.acceptance_lengths
        spec_tokens, spec_s = spec_tokens + s.decode_tokens, spec_s + s.decode_s
        base_tokens, base_s = base_tokens + b.decode_tokens, base_s + b.decode_s
        entry = {
            "prompt_index": i,
            "prompt_tokens": list(p.prompt_tokens),
            "output_tokens": list(p.spec.tokens),
            "baseline_tokens": list(p.baseline.tokens),
            "lossless": (p.spec.tokens == p.baseline.tokens) if greedy else None,
            "verdict": verdict_of(p.spec.tokens, p.baseline.tokens, p.divergence) if greedy else None,
            "acceptance_lengths": list(s.acceptance_lengths),
            "mean_acceptance": float(s.tau),
            "decode_tokens_per_s": float(s.decode_tokens_per_s),
            "baseline_tokens_per_s": float(b.decode_tokens_per_s),
            "generate_tokens_per_s": float(p.generate.stats.decode_tokens_per_s) if p.generate is not None else None,
        }
        if p.divergence is not None:
            entry["divergence"] = p.divergence
        if p.recheck is not None:
            entry["recheck"] = p.recheck
        if have_generate:
            g = p.generate.stats
            gen_tokens, gen_s = gen_tokens + g.decode_tokens, gen_s + g.decode_s
        results.append(entry)
    spec_rate = _rate(spec_tokens, spec_s)
    baselines = {"greedy-loop": _rate(base_tokens, base_s)}
    if have_generate:
        baselines["generate"] = _rate(gen_tokens, gen_s)
    baseline = max(baselines, key=lambda k: baselines[k])  # the faster one: the honest comparison
    verdicts = [r["verdict"] for r in results]
    first = run.prompts[0].spec.stats if run.prompts else None
    return {
        "schema_version": SCHEMA_VERSION,
        "backend": run.backend,
        "device": run.device,
        "dtype": run.dtype,
        "block_size": run.block_size,
        "temperature": float(temperature),
        "runtime": {
            "attention": first.attention if first else "",
            "cache": first.cache if first else "dynamic",
            "baseline": baseline,
            "baselines_tokens_per_s": {k: float(v) for k, v in baselines.items()},
            "strict": bool(strict),
        },
        "results": results,
        "summary": {
            "lossless": all(r["lossless"] for r in results) if greedy else None,
            "verdict": _worst(verdicts) if greedy else None,
            "mean_acceptance": float(mean_acceptance(lengths)),
            "histogram": {str(k): v for k, v in histogram(lengths, run.block_size).items()},
            "speedup": spec_rate / baselines[baseline] if baselines[baseline] > 0 else 0.0,
            "speedup_vs_greedy_loop": spec_rate / baselines["greedy-loop"] if baselines["greedy-loop"] > 0 else 0.0,
        },
    }


def _worst(verdicts: list[Optional[str]]) -> str:
    for v in ("differs", "near-tie"):
        if v in verdicts:
            return v
    return "lossless"


def first_divergence(a: list[int], b: list[int]) -> Optional[int]:
    """Index of the first token where two outputs differ (None when identical)."""
    return first_difference(a, b)


def exit_code(payload: dict[str, Any], min_acceptance: Optional[float]) -> int:
    """1 when greedy output differs from the baseline (a near-tie only with --strict, recorded in the
    report's runtime.strict) or the mean acceptance is under --min-acceptance."""
    summary = payload["summary"]
    strict = payload.get("runtime", {}).get("strict", False)
    verdict = summary.get("verdict")
    if verdict is None and summary["lossless"] is False:  # a report without verdicts
        verdict = "differs"
    if verdict == "differs" or (verdict == "near-tie" and strict):
        return EXIT_FAIL
    if min_acceptance is not None and summary["mean_acceptance"] < min_acceptance:
        return EXIT_FAIL
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------------------------


def _parse_ids(values: tuple[str, ...]) -> list[list[int]]:
    out = []
    for v in values:
        try:
            parts = v.replace(" ", "").split(",")
            if "" in parts:  # 1,,3 or a trailing comma: never drop an id silently
                raise ValueError(v)
            if not all(p.isascii() and p.lstrip("-").isdigit() for p in parts):  # int() reads '\u0661' as 1
                raise ValueError(v)
            ids = [int(p) for p in parts]
        except ValueError:
            raise InputError(f"--prompt-ids {v!r}: expected comma-separated token ids like 1,2,3") from None
        if not ids or any(i < 0 for i in ids):
            raise InputError(f"--prompt-ids {v!r}: expected non-negative token ids like 1,2,3")
        out.append(ids)
    return out


def _read_prompts_file(path: Optional[str]) -> list[str]:
    if path is None:
        return []
    from dflash_compat.files.safe_read import read_text

    # a regular file of bounded size: never /dev/zero or a FIFO that blocks
    text = read_text(path, MAX_PROMPTS_BYTES, what=f"--prompts-file {path}")
    return [line for line in text.splitlines() if line.strip()]


def _check_files(req: SmokeRequest, profile_out: Optional[str], force: bool) -> tuple:
    """What a hostile folder holds, refused before torch or mlx is imported (seconds, not the minutes a
    load takes; the config rules ran already, in preflight): the --profile-out path, and for local
    folders the checked weight lookup (an index leading out of the folder, pickled shards, FIFOs or
    devices among the files). Hub snapshots are checked the same way once downloaded. Returns the
    folders outputs must stay out of."""
    from dflash_compat.files.safe_write import model_folders
    from dflash_compat.resolve.refs import local_path
    from dflash_compat.runtime.checkpoints import draft_checkpoint, target_folder

    protected = model_folders(req.target, req.draft)
    if profile_out:
        from dflash_compat.liveprobe.profile import check_profile_out

        check_profile_out(profile_out, force=force, protected=protected)
    if local_path(req.target) is not None:
        target_folder(req.target, token=req.token, trust_remote_code=req.trust_remote_code)
        if req.texts:  # its tokenizer files too, before torch is imported (again in _tokenize, for Hub snapshots)
            from dflash_compat.files.safe_read import check_tokenizer_files

            check_tokenizer_files(local_path(req.target), f"target {req.target}")
    if local_path(req.draft) is not None:
        draft_checkpoint(req.draft, token=req.token)
    return protected


def _refuse(findings) -> None:
    """Exit 2 with one stderr line, as for every input error: the first finding smoke refuses the pair
    for (the check's own code and message), then the codes of the others, which `dflash-check` lists."""
    from dflash_compat.emitters._safe import printable

    line = f"dflash-check: error: {refusal_line(findings[0])}"
    if len(findings) > 1:
        rest = ", ".join(f.code for f in findings[1:])
        line += f" (and {len(findings) - 1} more: {rest}; `dflash-check TARGET --draft DRAFT` shows them)"
    click.echo(printable(line), err=True)  # escaped: a config value's control bytes never reach a terminal
    sys.exit(EXIT_INPUT)


@click.command("smoke", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target")
@click.option("--draft", "-d", required=True, help="The DFlash draft: a local folder or a Hub repo id.")
@click.option("--prompt", "-p", "prompts", multiple=True,
              help="A text prompt (needs the target's tokenizer); repeat for several.")
@click.option("--prompts-file", type=click.Path(dir_okay=False),
              help="A file of text prompts, one per line (blank lines are skipped).")
@click.option("--prompt-ids", multiple=True,
              help="A prompt as comma-separated token ids (e.g. 1,2,3); repeat for several.")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=64, show_default=True,
              help="Tokens to generate per prompt.")
@click.option("--block-size", type=click.IntRange(min=1),
              help="Block size per step, at most the draft's (default: the draft's block_size).")
@click.option("--temperature", type=FiniteFloatRange(min=0), default=0.0, show_default=True,
              help="0 is greedy and checked token for token; above 0 uses lossless rejection sampling (not comparable "
              "token for token).")
# top-p below 1e-6 keeps the top token alone on any vocabulary up to 10**6 (its probability is at least
# 1/V), and below float32's range it became 0 and masked every token (NaN probabilities, exit 1)
@click.option("--top-p", type=FiniteFloatRange(min=1e-6, max=1), default=1.0, show_default=True,
              help="Nucleus sampling mass (with --temperature > 0).")
@click.option("--top-k", type=click.IntRange(min=0), default=0, show_default=True,
              help="Sample among the k most likely tokens; 0 means all (with --temperature > 0).")
@click.option("--seed", type=SeedRange(0, 2**63 - 1, "the seeds the runtimes take"), default=0, show_default=True,
              help="Random seed for sampling (0 to 2**63-1, what torch and MLX both take).")
@click.option("--device", type=click.Choice(("auto", "cpu", "cuda")), default="auto", show_default=True,
              help="Where to run; auto picks cuda when available.")
@click.option("--dtype", type=click.Choice(("auto", "float32", "bfloat16", "float16")), default="auto",
              show_default=True,
              help="Weights and activations dtype; auto is bfloat16 on cuda, float32 on cpu.")
@click.option("--min-acceptance", type=FiniteFloatRange(min=0),
              help="Fail (exit 1) when the mean acceptance length is below this.")
@click.option("--format", "-f", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True,
              help="text: a summary table; json: the machine-readable report.")
@click.option("--backend", type=click.Choice(("torch", "mlx")), default="torch", show_default=True,
              help="Which reference runtime runs the models.")
@click.option("--threads", type=click.IntRange(min=1, max=4096), metavar="N",
              help="CPU threads for torch's matmuls (torch backend). Default: 1 for small models, never more than "
              "the cores other work leaves free; OMP_NUM_THREADS is honoured when set.")
@click.option("--trust-remote-code", is_flag=True,
              help="Allow the target repo's own Python code (never needed for standard architectures).")
@click.option("--token", envvar="HF_TOKEN",
              help="Hugging Face token for private or gated repos (default: HF_TOKEN or the saved login).")
@click.option("--profile-out", type=click.Path(dir_okay=False),
              help="Write the acceptance profile (per-position acceptance and the measured draft / verify costs) "
              "to this JSON file, for `dflash-check recommend` (never through a symlink, never into a model folder; "
              "an existing file only if it is a previous profile).")
@click.option("--force", is_flag=True,
              help="Run a pair the check fails only for low acceptance (DF117 RoPE base, DF121 scaling) to show the "
              "measured acceptance (exit 1, the finding quoted); let --profile-out replace a file or symlink that is "
              "not a previous profile.")
@click.option("--adapter", metavar="FILE_OR_NAME",
              help="Run the target through this adapter: a shim file written by `dflash-check adapt` (it is imported, "
              "i.e. run) or a built-in adapter name such as gpt2. Default: chosen by the model_type.")
@click.option("--attention", type=click.Choice(ATTENTION_CHOICES), default="auto", show_default=True,
              help="Attention kernels torch may use for target and draft. auto: on CUDA flash, then memory-efficient "
              "(cuDNN, which builds a graph for every new length, only with --cache static); on CPU flash, then math. "
              "A named kernel comes first, math after it.")
@click.option("--cache", "cache_kind", type=click.Choice(CACHE_KINDS), default="dynamic", show_default=True,
              help="static: target and draft caches allocated once for prompt + max new tokens + one block, so every "
              "forward has one shape (torch backend).")
@click.option("--cuda-graphs", "cuda_graphs", is_flag=True,
              help="With --cache static on CUDA: run the target's verify block (and the baseline's one-token "
              "forward) and the draft's step as CUDA graphs, through torch.compile(mode='reduce-overhead').")
@click.option("--strict", is_flag=True,
              help="Fail (exit 1) on a near-tie too: greedy output that differs where the target's top two logits are "
              "within the dtype's rounding.")
@click.option("--recheck", is_flag=True,
              help="Rerun each prompt whose output differs alone in float32 (torch; when it fits in memory) and "
              "report whether it is lossless there.")
def smoke_cmd(target, draft, prompts, prompts_file, prompt_ids, max_new_tokens, block_size, temperature, top_p, top_k,
              seed, device, dtype, min_acceptance, fmt, backend, threads, trust_remote_code, token, profile_out,
              force, adapter, attention, cache_kind, cuda_graphs, strict, recheck) -> None:
    """Run DFlash speculative decoding of TARGET with DRAFT on a few prompts, next to plain greedy
    decoding of TARGET alone, and report losslessness, acceptance lengths and the speed-up.

    Before loading any weights, smoke runs the checker's rules for the backend its runtime mirrors
    (dflash for torch, mlx for MLX) and refuses the pair in one line where `dflash-check` reports an
    error (--force runs a pair refused only for low acceptance, and exits 1).

    Verdicts (temperature 0): lossless (token-identical to greedy decoding); near-tie (the first
    difference is where the target's top two logits are within the dtype's rounding, measured in
    the block and the one-token forward: not a failure unless --strict); differs (a bug).

    Exit codes: 0 passed; 1 output differs from the greedy baseline (temperature 0; a near-tie only
    with --strict) or the mean acceptance is under --min-acceptance; 2 bad input, a pairing the check
    calls an error, or one the runtime cannot run.
    """
    try:
        sampling = Sampling(temperature=temperature, top_p=top_p, top_k=top_k, seed=seed)  # checked before any load
        if threads is not None and backend != "torch":
            raise InputError("--threads is for --backend torch; MLX chooses its own CPU threads")
        if backend != "torch" and (attention != "auto" or cache_kind != "dynamic" or recheck or cuda_graphs):
            raise InputError("--attention, --cache static, --cuda-graphs and --recheck are for --backend torch; MLX "
                             "has one attention kernel and a dynamic cache")
        if cuda_graphs and (cache_kind != "static" or device == "cpu"):
            raise InputError("--cuda-graphs needs --cache static and a CUDA device")
        texts = check_texts(prompts, "--prompt") + _read_prompts_file(prompts_file)  # valid Unicode, before any load
        ids = _parse_ids(prompt_ids)
        if not texts and not ids:
            texts = [DEFAULT_PROMPT]
        # the checker's config rules first: smoke refuses what `dflash-check` calls an error, before any load
        pre = preflight(target, draft, backend, token=token, trust_remote_code=trust_remote_code, adapter=adapter)
        forced = list(pre.refusals) if force and pre.refusals and all(
            f.code in ACCEPTANCE_ONLY for f in pre.refusals) else []
        if pre.refusals and not forced:
            _refuse(pre.refusals)
            return
        if block_size is not None:
            check_block_size(block_size, pre.draft_block_size, "--block-size")
        req = SmokeRequest(
            target=target, draft=draft, texts=texts, prompt_ids=ids, max_new_tokens=max_new_tokens,
            block_size=block_size, sampling=sampling, device=device, dtype=dtype,
            trust_remote_code=trust_remote_code, token=token, adapter=adapter, threads=threads,
            profile_block_size=2 if profile_out else None, attention=attention, cache=cache_kind, recheck=recheck,
            graphs=cuda_graphs,
        )
        protected = _check_files(req, profile_out, force)
        run = _run_with_progress(backend, req)
        payload = build_payload(run, temperature, strict)
        if profile_out:
            from dflash_compat.liveprobe.profile import profile_from_smoke, write_profile

            write_profile(profile_out, profile_from_smoke(run, payload["summary"]["speedup"]), force=force,
                          protected=protected)
    except DFlashCompatError:
        raise  # rendered by the CLI group (dflash_compat/cli/errors.py): one escaped line, its exit code
    if fmt == "json":
        from dflash_compat.emitters._safe import dumps

        click.echo(dumps(payload), nl=False)  # strict JSON, like every JSON output
    else:
        from dflash_compat.cli.console import make_console, render_smoke

        divergence = [first_divergence(r["output_tokens"], r["baseline_tokens"]) for r in payload["results"]]
        render_smoke(payload, make_console(), divergence=divergence, min_acceptance=min_acceptance)
    if forced:  # the check fails this pair: say why, after the measured acceptance
        from dflash_compat.emitters._safe import printable

        for f in forced:
            click.echo(printable(f"dflash-check: ran anyway (--force); the check fails this pair: {refusal_line(f)}"),
                       err=True)
        sys.exit(1)
    sys.exit(exit_code(payload, min_acceptance))


def _run_with_progress(backend: str, req: SmokeRequest) -> SmokeRun:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dflash_compat.terminal import make_console

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    console = make_console(stderr=True)
    # off when stderr is not a terminal: a transient bar still leaves a blank line there
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as progress:
        task = progress.add_task("loading models", total=None)

        def total(n: int) -> None:
            progress.update(task, total=n, description="generating (spec + baseline)")

        return _run_backend(backend, req, lambda: progress.advance(task), total)
