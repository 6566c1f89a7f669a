"""The PyTorch runtime on a GPU, in one run (issue #20): the figures docs/runtime.md's GPU table carries.

    python benchmarks/bench_gpu.py --out benchmarks/out/gpu.json          # a CUDA machine: full shapes (~5 min)
    python benchmarks/bench_gpu.py --small --device cpu --out /tmp/g.json # tiny shapes on CPU (the CI test)

1. The demo pair (examples/demo) in float32 and bfloat16, through smoke's own protocol (run_prompts +
   build_payload: verdict, tau, speed-up over the faster baseline), next to dflash 0.1.0's
   `dflash_generate` on the same prompts (tokens compared with ours) when the dflash package is installed.
2. An 8B-shaped target (Qwen3-8B's config, random bf16 weights, built on the device: no download) with a
   draft shaped like z-lab/Qwen3-8B-DFlash-b16 (random weights): ms a greedy token for our loop (dynamic
   and static cache), dflash's loop (block size 1) and transformers' generate() (dynamic and static);
   ms a DFlash step (ours dynamic / static / static with CUDA graphs, dflash's); kernel launches a token (CUDA: torch.profiler's
   kernel events / tokens); the memory-bandwidth floor (weight bytes / a measured device copy rate);
   the verdict of our speculative output against our greedy output (near-tie / differs, with margins).
--small shrinks the 8B shapes (hidden 64, 4 layers, vocab 256) and the token counts so that CI runs the
whole script on CPU in seconds; its numbers mean nothing, its JSON has every field.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Qwen3-8B's published config (the fields a Qwen3Config needs) and z-lab/Qwen3-8B-DFlash-b16's shape
QWEN3_8B = dict(vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                rms_norm_eps=1e-6, rope_theta=1000000, tie_word_embeddings=False, hidden_act="silu")
DRAFT_8B = dict(num_hidden_layers=5, block_size=16, target_layer_ids=[1, 9, 17, 25, 33], mask_token_id=151669)
SMALL = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, max_position_embeddings=4096)
DRAFT_SMALL = dict(num_hidden_layers=2, block_size=8, target_layer_ids=[0, 2], mask_token_id=255)


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(fn: Callable[[], Any], device) -> tuple[Any, float]:
    _sync(device)
    t0 = time.perf_counter()
    out = fn()
    _sync(device)
    return out, time.perf_counter() - t0


def _dflash():
    try:
        import dflash.model as ref
    except ImportError:
        return None
    return ref


# ---------------------------------------------------------------------------------------------
# 1. the demo pair
# ---------------------------------------------------------------------------------------------


def bench_demo(device: str, small: bool) -> dict[str, Any]:
    import torch

    from dflash_compat.cli.commands.smoke import SmokeRequest, SmokeRun, build_payload, run_prompts
    from dflash_compat.runtime import torch_generate as rt
    from dflash_compat.runtime.core import first_difference

    demo = ROOT / "examples" / "demo"
    texts = [t for t in (demo / "prompts.txt").read_text().splitlines() if t.strip()]
    texts = texts[:1] if small else texts
    new = 8 if small else 128
    out: dict[str, Any] = {"pair": "examples/demo", "prompts": len(texts), "max_new_tokens": new}
    ref = _dflash()
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(demo / "target"))
    prompts = [list(tok(t)["input_ids"]) for t in texts]
    for dtype_name in ("float32", "bfloat16"):
        dtype = getattr(torch, dtype_name)
        target = rt.load_target(demo / "target", device=device, dtype=dtype)
        draft = rt.load_draft(demo / "draft", device=device, dtype=dtype)
        req = SmokeRequest(target="demo", draft="demo", prompt_ids=prompts, max_new_tokens=new)
        bs, runs = run_prompts(rt, draft, target, prompts, req, lambda: None, lambda n: None)
        payload = build_payload(SmokeRun("torch", device, dtype_name, bs, runs), 0.0)
        row: dict[str, Any] = {
            "verdict": payload["summary"]["verdict"],
            "tau": payload["summary"]["mean_acceptance"],
            "speedup": payload["summary"]["speedup"],
            "speedup_vs_greedy_loop": payload["summary"]["speedup_vs_greedy_loop"],
            "runtime": payload["runtime"],
            "ours_tokens_per_s": [r["decode_tokens_per_s"] for r in payload["results"]],
            "divergences": [r.get("divergence") for r in payload["results"] if r.get("divergence")],
        }
        if ref is not None:
            row["dflash"] = _demo_dflash(ref, demo, target, prompts, runs, new, dtype, device, first_difference)
        out[dtype_name] = row
        del target, draft
    return out


def _demo_dflash(ref, demo: Path, target, prompts, runs, new: int, dtype, device: str, first_difference) -> dict:
    """dflash 0.1.0's spec loop on the same prompts: tokens/s and whether its tokens equal ours."""
    import torch

    ref._cuda_time = lambda: (_sync(torch.device(device)), time.perf_counter())[1]  # its clock needs CUDA
    draft = ref.DFlashDraftModel.from_pretrained(str(demo / "draft"), dtype=dtype).to(device).eval()
    rates, same = [], []
    for ids, run in zip(prompts, runs):
        x = torch.tensor([ids], device=device)
        res = ref.dflash_generate(draft, target.model, x, new, None, return_stats=True)
        rates.append(1.0 / res.time_per_output_token if res.time_per_output_token else 0.0)
        theirs = res.output_ids[0, len(ids):].tolist()
        same.append(first_difference(theirs, run.spec.tokens[: len(theirs)]) is None)
    return {"tokens_per_s": rates, "same_tokens_as_ours": same}


# ---------------------------------------------------------------------------------------------
# 2. the 8B-shaped target
# ---------------------------------------------------------------------------------------------


def _big_pair(device, small: bool, tmp: Path):
    """A random target with Qwen3-8B's config and a z-lab-shaped draft, bf16, built on the device."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from dflash_compat.runtime import torch_generate as rt
    from dflash_compat.runtime.draft_config import draft_config
    from dflash_compat.runtime.torch_draft import build_draft
    from dflash_compat.specs import parse_draft_config

    shape = SMALL if small else QWEN3_8B
    dshape = DRAFT_SMALL if small else DRAFT_8B
    cfg = Qwen3Config(**shape)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # built in bf16 on the device: 16 GB, never a float32 copy
    try:
        with torch.device(device):
            model = Qwen3ForCausalLM(cfg).eval()
    finally:
        torch.set_default_dtype(default)
    raw = {**shape, "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "attention_bias": False,
           "num_hidden_layers": dshape["num_hidden_layers"], "num_target_layers": shape["num_hidden_layers"],
           "block_size": dshape["block_size"],
           "dflash_config": {"mask_token_id": dshape["mask_token_id"], "target_layer_ids": dshape["target_layer_ids"]}}
    dcfg = draft_config(parse_draft_config(raw, "bench-draft"))
    draft = build_draft(dcfg, raw)
    gen = torch.Generator(device=device).manual_seed(1)
    state = {}
    for name, p in draft.state_dict().items():
        t = torch.randn(p.shape, generator=gen, device=device, dtype=torch.float32)
        t = 1.0 + 0.1 * t if "norm" in name else t * (1.0 / p.shape[-1] ** 0.5)
        state[name] = t.to(torch.bfloat16)
    draft.load_state_dict(state, strict=True, assign=True)
    draft = draft.to(device=device, dtype=torch.bfloat16).eval()
    theirs = None
    ref = _dflash()
    if ref is not None:
        try:
            with torch.device(device):
                theirs = ref.DFlashDraftModel(Qwen3Config(**raw)).to(torch.bfloat16).eval()
            theirs.load_state_dict(state, strict=True)
        except (RuntimeError, KeyError, TypeError, ValueError) as exc:  # names or shapes differ: say so, go on
            theirs = f"dflash draft not built: {type(exc).__name__}: {str(exc)[:200]}"
    return rt.target_for(model), draft, theirs


def _launches_per_token(fn: Callable[[], Any], tokens: int, device) -> Optional[float]:
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        _sync(device)
    kernels = [e for e in prof.events() if e.device_type.name == "CUDA"]
    return len(kernels) / max(tokens, 1)


def _bandwidth(device) -> Optional[float]:
    """Device memory bandwidth, bytes/s, from timing a 1 GiB copy (read + write)."""
    if device.type != "cuda":
        return None
    import torch

    a = torch.empty(1 << 30, dtype=torch.uint8, device=device)
    b = torch.empty_like(a)
    b.copy_(a)
    _, s = _timed(lambda: [b.copy_(a) for _ in range(5)], device)
    return 2 * a.numel() * 5 / s


def bench_big(device: str, small: bool) -> dict[str, Any]:
    import torch

    from dflash_compat.cli.commands.smoke import PromptRun, measure_divergence
    from dflash_compat.runtime import torch_generate as rt

    dev = torch.device(device)
    n_prompt, new = (8, 8) if small else (128, 64)
    with tempfile.TemporaryDirectory() as tmp:
        target, draft, theirs = _big_pair(device, small, Path(tmp))
    gen = torch.Generator().manual_seed(2)
    prompt = torch.randint(0, target.vocab_size - 1, (n_prompt,), generator=gen).tolist()
    out: dict[str, Any] = {"shape": "small" if small else "Qwen3-8B", "dtype": "bfloat16", "prompt_tokens": n_prompt,
                           "new_tokens": new, "block_size": draft.block_size}
    greedy_ms: dict[str, Optional[float]] = {}
    step_ms: dict[str, Optional[float]] = {}
    spec_runs = {}
    for cache in ("dynamic", "static"):
        rt.greedy_generate(target, prompt, max_new_tokens=4, cache=cache)  # warm-up
        g = rt.greedy_generate(target, prompt, max_new_tokens=new, cache=cache)
        greedy_ms[f"ours_{cache}"] = 1e3 * g.stats.decode_s / max(g.stats.decode_tokens, 1)
        rt.generate_baseline(target, prompt, max_new_tokens=4, cache=cache)
        b = rt.generate_baseline(target, prompt, max_new_tokens=new, cache=cache)
        greedy_ms[f"generate_{cache}"] = 1e3 * b.stats.decode_s / max(b.stats.decode_tokens, 1)
        rt.spec_generate(draft, target, prompt, max_new_tokens=4, cache=cache)
        s = rt.spec_generate(draft, target, prompt, max_new_tokens=new, cache=cache)
        step_ms[f"ours_{cache}"] = 1e3 * s.stats.decode_s / max(len(s.stats.acceptance_lengths), 1)
        spec_runs[cache] = (s, g)
    if dev.type == "cuda":  # CUDA graphs of the verify block / the one-token forward (static cache)
        try:
            for _ in range(2):  # the first call compiles and records
                g = rt.greedy_generate(target, prompt, max_new_tokens=new, cache="static", graphs=True)
                s = rt.spec_generate(draft, target, prompt, max_new_tokens=new, cache="static", graphs=True)
            greedy_ms["ours_static_graphs"] = 1e3 * g.stats.decode_s / max(g.stats.decode_tokens, 1)
            step_ms["ours_static_graphs"] = 1e3 * s.stats.decode_s / max(len(s.stats.acceptance_lengths), 1)
            out["graphs_same_tokens"] = s.tokens == spec_runs["static"][0].tokens
        except Exception as exc:  # noqa: BLE001 - a compile failure is a result to report, not a crash
            out["graphs_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        finally:
            rt.greedy_generate(target, prompt, max_new_tokens=2, cache="static")  # graphs off again
    else:
        greedy_ms["ours_static_graphs"] = step_ms["ours_static_graphs"] = None  # CUDA only
    ref = _dflash()
    if ref is not None and not isinstance(theirs, str) and theirs is not None:
        ref._cuda_time = lambda: (_sync(dev), time.perf_counter())[1]
        x = torch.tensor([prompt], device=dev)
        ref.dflash_generate(theirs, target.model, x, 4, None, block_size=1)
        r = ref.dflash_generate(theirs, target.model, x, new, None, block_size=1, return_stats=True)
        greedy_ms["dflash"] = 1e3 * r.time_per_output_token
        ref.dflash_generate(theirs, target.model, x, 4, None)
        r = ref.dflash_generate(theirs, target.model, x, new, None, return_stats=True)
        step_ms["dflash"] = 1e3 * r.time_per_output_token * r.num_output_tokens / max(len(r.acceptance_lengths), 1)
    elif isinstance(theirs, str):
        out["dflash"] = theirs
    out["greedy_ms_per_token"] = greedy_ms
    out["step_ms"] = step_ms
    out["step_over_greedy_token"] = step_ms["ours_dynamic"] / greedy_ms["ours_dynamic"] if greedy_ms["ours_dynamic"] else None
    out["launches_per_token"] = _launches_per_token(
        lambda: rt.greedy_generate(target, prompt, max_new_tokens=16), 16, dev)
    weight_bytes = sum(p.numel() * p.element_size() for p in target.model.parameters())
    bandwidth = _bandwidth(dev)
    out["weight_bytes"] = weight_bytes
    out["bandwidth_bytes_per_s"] = bandwidth
    out["floor_ms_per_token"] = 1e3 * weight_bytes / bandwidth if bandwidth else None
    verdicts = {}
    for cache, (s, g) in spec_runs.items():
        run = PromptRun(prompt, s, g)
        div = measure_divergence(rt, draft, target, run, "auto", "bfloat16")
        verdicts[cache] = {"verdict": "lossless" if div is None else div["verdict"], "divergence": div,
                           "tau": s.stats.tau}
    out["verdict"] = verdicts
    return out


def main(argv: Optional[list[str]] = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    parser.add_argument("--small", action="store_true", help="tiny shapes and few tokens (CI on CPU)")
    parser.add_argument("--out", help="write the JSON here (default: print it)")
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--skip-big", action="store_true")
    args = parser.parse_args(argv)
    import torch
    import transformers

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA GPU")
    if device == "cpu":
        torch.set_num_threads(1)  # tiny shapes: one thread is fastest and leaves the other cores alone
    ref = _dflash()
    result: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": torch.cuda.get_device_name(0) if device == "cuda" else platform.processor() or platform.machine(),
        "device": device, "small": args.small, "torch": torch.__version__,
        "transformers": transformers.__version__,
        "dflash": _dflash_version() if ref is not None else None,
    }
    if not args.skip_demo:
        result["demo"] = bench_demo(device, args.small)
    if not args.skip_big:
        result["big"] = bench_big(device, args.small)
    text = json.dumps(result, indent=1, default=str)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    else:
        print(text)
    return result


def _dflash_version() -> Optional[str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dflash")
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    main()
