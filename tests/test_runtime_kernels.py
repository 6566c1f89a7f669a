"""Issue #20 on CPU: the attention-kernel context, the static cache (token-identical to the dynamic one,
one key length per forward), the tie-aware verdict (a crafted near-tie, a broken rollback), the
honest speed-up's baselines. The CUDA-only parts (kernel choice on a GPU, CUDA graphs) skip without one."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch import nn  # noqa: E402

from dflash_compat.cli.commands.smoke import SmokeRequest, SmokeRun, build_payload, exit_code, run_prompts  # noqa: E402
from dflash_compat.exceptions import InputError  # noqa: E402
from dflash_compat.runtime import torch_generate as rt  # noqa: E402
from dflash_compat.runtime.core import (  # noqa: E402
    TIE_ULPS,
    classify_divergence,
    dtype_step,
    static_capacity,
    step_of,
)
from dflash_compat.runtime.torch_attention import attention_context, attention_policy  # noqa: E402
from dflash_compat.runtime.torch_draft import load_draft  # noqa: E402

from .tiny_dflash import draft_config, draft_state, make_pair, save_draft, target_config, tiny_target  # noqa: E402

PROMPT = [1, 5, 9, 3, 7, 2, 4]


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def _flags() -> dict[str, bool]:
    b = torch.backends.cuda
    return {"flash": b.flash_sdp_enabled(), "efficient": b.mem_efficient_sdp_enabled(), "math": b.math_sdp_enabled(),
            "cudnn": b.cudnn_sdp_enabled()}


# ---- kernel selection ---------------------------------------------------------------------------------


def test_policy_on_cuda_keeps_cudnn_off_the_dynamic_decode_path():
    assert attention_policy("auto", "cuda").backends == ("flash", "efficient", "math")
    assert attention_policy("auto", "cuda", static_cache=True).backends == ("flash", "efficient", "cudnn", "math")
    assert attention_policy("auto", "cpu").backends == ("flash", "math")
    assert attention_policy("cudnn", "cuda").backends == ("cudnn", "math")
    assert attention_policy("math", "cuda").backends == ("math",)
    assert attention_policy("auto", "mps").backends == ()  # torch's own choice there
    assert attention_policy("auto", "cuda").label == "auto: flash > efficient > math (cuda)"
    for bad in ("efficient", "cudnn"):
        with pytest.raises(InputError, match="CUDA kernel"):
            attention_policy(bad, "cpu")
    with pytest.raises(InputError, match="expected one of"):
        attention_policy("fastest", "cuda")


@pytest.mark.parametrize("choice, on, off", [
    ("auto", {"flash", "math"}, {"efficient", "cudnn"}),
    ("math", {"math"}, {"flash", "efficient", "cudnn"}),
    ("flash", {"flash", "math"}, {"efficient", "cudnn"}),
])
def test_every_forward_runs_inside_the_kernel_context(tmp_path, monkeypatch, choice, on, off):
    import torch.nn.attention as attention

    model, _, folder = make_pair(tmp_path, seed=1, block_size=4, target={"vocab": 32})
    target, draft = rt.target_for(model), load_draft(folder)
    calls = []
    real = attention.sdpa_kernel

    def spy(backends, set_priority=False):
        calls.append(([b.name for b in backends], set_priority))
        return real(backends, set_priority=set_priority)

    monkeypatch.setattr(attention, "sdpa_kernel", spy)
    seen = []
    hooks = [m.register_forward_pre_hook(lambda *_: seen.append(_flags())) for m in (model, draft)]
    before = _flags()
    stream = rt.stream_generate(draft, target, PROMPT, max_new_tokens=12, attention=choice)
    first = next(stream)
    assert _flags() == before  # between steps the caller's own settings hold
    rest = list(stream)
    for h in hooks:
        h.remove()
    assert _flags() == before
    assert seen and len(calls) >= 1 + len(rest)  # one context per step
    assert all(set_priority for _, set_priority in calls)
    expected = [{"flash": "FLASH_ATTENTION", "math": "MATH"}[b] for b in attention_policy(choice, "cpu").backends]
    assert all(names == expected for names, _ in calls)
    for flags in seen:  # target and draft forwards alike
        assert {k for k, v in flags.items() if v} >= on and not {k for k, v in flags.items() if v} & off
    assert first.stats.attention == attention_policy(choice, "cpu").label
    greedy = rt.greedy_generate(target, PROMPT, max_new_tokens=6, attention=choice)
    assert greedy.stats.attention == first.stats.attention


def test_a_cuda_only_kernel_on_cpu_is_one_input_error(tmp_path):
    model, _, folder = make_pair(tmp_path, seed=1, block_size=4, target={"vocab": 32})
    with pytest.raises(InputError, match="CUDA kernel"):
        rt.spec_generate(load_draft(folder), rt.target_for(model), PROMPT, max_new_tokens=4, attention="cudnn")
    with pytest.raises(InputError, match="cache 'paged'"):
        rt.greedy_generate(rt.target_for(model), PROMPT, max_new_tokens=4, cache="paged")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_decode_path_never_calls_cudnn(tmp_path):
    model, _, folder = make_pair(tmp_path, seed=1, block_size=4, target={"vocab": 32})
    model = model.to("cuda", torch.bfloat16)
    target, draft = rt.target_for(model), load_draft(folder, device="cuda", dtype=torch.bfloat16)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        rt.spec_generate(draft, target, PROMPT, max_new_tokens=24)
    names = " ".join(e.name for e in prof.events())
    assert "cudnn_attention" not in names.lower()


# ---- static cache ------------------------------------------------------------------------------------


def _random_pair(tmp_path, rng: random.Random, i: int):
    vocab = rng.choice([16, 32, 48])
    layers = rng.choice([2, 3, 4])
    tcfg = target_config(vocab=vocab, layers=layers)
    model = tiny_target(rng.randrange(10_000), vocab=vocab, layers=layers)
    ids = sorted(rng.sample(range(layers), rng.choice([1, 2])))
    extra = rng.choice([{}, {"is_causal": True},
                        {"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 3,
                         "use_sliding_window": True}])
    dcfg = draft_config(tcfg, version=rng.choice([1, 2]), block_size=rng.choice([2, 4, 8]), target_layer_ids=ids,
                        **extra)
    folder = save_draft(tmp_path / f"d{i}", dcfg, draft_state(dcfg, rng.randrange(10_000)))
    prompt = [rng.randrange(vocab - 1) for _ in range(rng.randrange(1, 12))]
    return model, load_draft(folder), prompt, vocab


def test_static_cache_is_token_identical_to_the_dynamic_cache(tmp_path):
    rng = random.Random(2026)
    for i in range(16):
        model, draft, prompt, vocab = _random_pair(tmp_path, rng, i)
        target = rt.target_for(model)
        n = rng.randrange(1, 40)
        stops = [rng.randrange(vocab)] if rng.random() < 0.3 else []
        kw = dict(max_new_tokens=n, stop_token_ids=stops, block_size=rng.randrange(1, draft.block_size + 1))
        dynamic = rt.spec_generate(draft, target, prompt, **kw)
        static = rt.spec_generate(draft, target, prompt, cache="static", **kw)
        assert static.tokens == dynamic.tokens, i
        assert static.stats.acceptance_lengths == dynamic.stats.acceptance_lengths, i
        assert static.stats.cache == "static" and dynamic.stats.cache == "dynamic"
        plain = rt.greedy_generate(target, prompt, max_new_tokens=n, stop_token_ids=stops)
        assert rt.greedy_generate(target, prompt, max_new_tokens=n, stop_token_ids=stops, cache="static").tokens \
            == plain.tokens == dynamic.tokens, i


def test_static_cache_keeps_one_key_length(tmp_path, monkeypatch):
    model, _, folder = make_pair(tmp_path, seed=4, block_size=4, target={"vocab": 32})
    target, draft = rt.target_for(model), load_draft(folder)
    keys = []
    real = torch.nn.functional.scaled_dot_product_attention

    def spy(q, k, v, *args, **kwargs):
        keys.append(k.shape[-2])
        return real(q, k, v, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    rt.spec_generate(draft, target, PROMPT, max_new_tokens=20, cache="static")
    # target and draft, every step: one key length. (transformers' sdpa slices the keys of a prefill into an
    # empty StaticCache to the prompt, transformers 5.25 integrations/sdpa_attention.py:170-177: once per layer)
    assert set(keys) == {static_capacity(len(PROMPT), 20, 4), len(PROMPT)}
    assert keys.count(len(PROMPT)) == model.config.num_hidden_layers and set(keys[4:]) == {keys[-1]}
    keys.clear()
    rt.spec_generate(draft, target, PROMPT, max_new_tokens=20)
    assert len(set(keys)) > 3  # the dynamic cache: a new key length nearly every step


def test_static_rollback_overwrites_rejected_positions(tmp_path):
    # a draft that is nearly always wrong: almost every step rejects most of its block
    model, _, folder = make_pair(tmp_path, seed=9, block_size=8, target={"vocab": 48})
    target, draft = rt.target_for(model), load_draft(folder)
    out = rt.spec_generate(draft, target, PROMPT, max_new_tokens=30, cache="static")
    assert any(a < d for a, d in zip(out.stats.accepted, out.stats.drafted))  # rejections happened
    assert out.tokens == rt.greedy_generate(target, PROMPT, max_new_tokens=30).tokens


# ---- tie-aware verdict -------------------------------------------------------------------------------


class _TieHead(nn.Module):
    """An lm_head whose top two logits are tokens `a` and `b`, exactly one bfloat16 step apart: in a
    one-token forward `a` is ahead, in a forward of several positions (a verify block) `b` is, as
    batched and one-at-a-time matmuls can round a near-tie either way."""

    def __init__(self, base: nn.Module, a: int, b: int) -> None:
        super().__init__()
        self.base, self.a, self.b = base, a, b
        self.weight = base.weight

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        out = self.base(h)
        hi = (out.float().abs().amax(-1) + 4.0).to(torch.bfloat16)  # [B, T], above every other logit
        lo = hi.float() - torch.tensor([dtype_step("bfloat16", float(x)) for x in hi.flatten()]).view(hi.shape)
        lo = lo.to(torch.bfloat16)
        assert torch.all(lo.float() < hi.float())  # one representable step, no rounding back up
        first, second = (self.b, self.a) if h.shape[1] > 1 else (self.a, self.b)
        out = out.clone()
        out[..., first], out[..., second] = hi.to(out.dtype), lo.to(out.dtype)
        return out


def _near_tie_pair(tmp_path):
    tcfg = target_config(vocab=32)
    model = tiny_target(5, vocab=32).to(torch.bfloat16)
    model.lm_head = _TieHead(model.lm_head, 7, 11)
    dcfg = draft_config(tcfg, block_size=4, mask_token_id=31)
    folder = save_draft(tmp_path / "draft", dcfg, draft_state(dcfg, 6))
    return rt.target_for(model), load_draft(folder, dtype=torch.bfloat16)


def _smoke_run(target, draft, prompts, **req):
    request = SmokeRequest(target="t", draft="d", prompt_ids=prompts, max_new_tokens=12, **req)
    bs, runs = run_prompts(rt, draft, target, prompts, request, lambda: None, lambda n: None)
    return SmokeRun("torch", "cpu", "bfloat16", bs, runs)


def test_a_crafted_near_tie_is_not_a_failure_unless_strict(tmp_path):
    target, draft = _near_tie_pair(tmp_path)
    run = _smoke_run(target, draft, [PROMPT])
    p = run.prompts[0]
    assert p.spec.tokens != p.baseline.tokens  # block forwards pick 11, one-token forwards 7
    div = p.divergence
    assert div["verdict"] == "near-tie" and div["dtype"] == "bfloat16"
    assert (div["spec_token"], div["baseline_token"]) == (11, 7) and div["index"] == 1
    block, single = div["block"], div["single"]
    assert block["top1"] == 11 and single["top1"] == 7  # each forward's own order, measured again
    step = dtype_step("bfloat16", block["top1_logit"])
    assert block["margin"] == pytest.approx(step) and single["margin"] == pytest.approx(step)
    assert div["gap"] <= div["tolerance"] == pytest.approx(TIE_ULPS * step)
    payload = build_payload(run, 0.0)
    assert payload["results"][0]["verdict"] == payload["summary"]["verdict"] == "near-tie"
    assert payload["summary"]["lossless"] is False  # still not token-identical, and said so
    assert payload["summary"]["mean_acceptance"] == pytest.approx(p.spec.stats.tau)  # tau over the whole output
    assert exit_code(payload, None) == 0
    assert exit_code(build_payload(run, 0.0, strict=True), None) == 1


def test_classify_a_real_difference_and_edge_cases():
    far = {"spec_logit": 3.0, "baseline_logit": 5.0, "top1": 2, "top1_logit": 5.0, "top2": 1, "top2_logit": 3.0,
           "margin": 2.0}
    verdict = classify_divergence(4, 1, 2, {"block": far, "single": far}, "bfloat16")
    assert verdict["verdict"] == "differs" and verdict["gap"] == 2.0
    tie = dict(far, spec_logit=5.0, baseline_logit=5.0 - 2 * dtype_step("bfloat16", 5.0))
    assert classify_divergence(4, 1, 2, {"block": tie, "single": tie}, "bfloat16")["verdict"] == "near-tie"
    # the same gap in float32 is far beyond its rounding
    assert classify_divergence(4, 1, 2, {"block": tie, "single": tie}, "float32")["verdict"] == "differs"
    assert classify_divergence(3, None, 2, None, "bfloat16")["verdict"] == "differs"  # one output stopped
    assert dtype_step("bfloat16", 4.625) == 2 ** -5 and dtype_step("float32", 1.0) == 2 ** -23


def test_step_of_finds_the_verify_block():
    # prefill token 0; steps commit 3, 1, 4 tokens (blocks of 4: 3 drafted each)
    lengths, drafted = [3, 1, 4], [3, 3, 3]
    assert step_of(0, lengths, drafted) == (0, 0)
    assert [step_of(i, lengths, drafted)[0] for i in range(1, 9)] == [1, 1, 1, 4, 5, 5, 5, 5]
    assert step_of(5, lengths, drafted) == (5, 4)
    with pytest.raises(ValueError):
        step_of(9, lengths, drafted)


def test_a_broken_rollback_differs(tmp_path, monkeypatch):
    model, _, folder = make_pair(tmp_path, seed=3, block_size=4, target={"vocab": 16})
    target, draft = rt.target_for(model), load_draft(folder)
    monkeypatch.setattr(type(target), "rollback", lambda self, cache, length: None)  # rejected tokens stay
    run = _smoke_run(target, draft, [PROMPT, [3, 1, 4, 1, 5]])
    bad = [p for p in run.prompts if p.spec.tokens != p.baseline.tokens]
    assert bad and all(p.divergence["verdict"] == "differs" for p in bad)
    payload = build_payload(run, 0.0)
    assert payload["summary"]["verdict"] == "differs" and exit_code(payload, None) == 1


# ---- honest speed-up ---------------------------------------------------------------------------------


def test_generate_baseline_decodes_as_users_do(tmp_path):
    model, _, folder = make_pair(tmp_path, seed=2, block_size=4, target={"vocab": 32})
    target = rt.target_for(model)
    ours = rt.greedy_generate(target, PROMPT, max_new_tokens=16, stop_token_ids=[5])
    for cache in ("dynamic", "static"):
        gen = rt.generate_baseline(target, PROMPT, max_new_tokens=16, stop_token_ids=[5], cache=cache)
        assert gen.tokens == ours.tokens  # transformers' own greedy loop: the same tokens
        assert gen.stats.cache == cache and gen.stats.decode_s > 0 and gen.stats.attention == ours.stats.attention
    run = _smoke_run(target, load_draft(folder), [PROMPT])
    payload = build_payload(run, 0.0)
    rates = payload["runtime"]["baselines_tokens_per_s"]
    assert payload["runtime"]["baseline"] == max(rates, key=rates.get)
    spec = payload["results"][0]["decode_tokens_per_s"]
    assert payload["summary"]["speedup"] == pytest.approx(spec / max(rates.values()))
    assert payload["summary"]["speedup"] <= payload["summary"]["speedup_vs_greedy_loop"] + 1e-9


def test_a_run_outside_the_context_uses_torchs_defaults():
    before = _flags()
    with attention_context(attention_policy("math", "cpu")):
        assert _flags() == {"flash": False, "efficient": False, "math": True, "cudnn": False}
    assert _flags() == before


# ---- benchmarks/cuda_smoke.sh: PYTHON as a command name ------------------------------------------------


def test_cuda_smoke_takes_a_command_name_in_python(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "cuda_smoke.sh"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "ran"
    # a command on PATH (not a path): it must be the interpreter the script runs
    (bin_dir / "gpu-python").write_text(f'#!/bin/sh\ntouch "{marker}"\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "gpu-python").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHON": "gpu-python"}
    res = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert marker.exists(), res.stderr
    if not torch.cuda.is_available():
        assert res.returncode == 1 and "no CUDA GPU" in res.stderr
    res = subprocess.run(["bash", str(script)], env={**env, "PYTHON": "no-such-python-here"}, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2 and "PYTHON=no-such-python-here" in res.stderr


# ---- the runtime's transformers window (#21 item 9) ----------------------------------------------------


def test_ci_runs_the_runtime_tests_on_the_oldest_allowed_transformers():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    ci = (root / ".ci" / "run").read_text()
    floor = re.search(r'"transformers>=([\d.]+)"', (root / "pyproject.toml").read_text()).group(1)
    oldest = re.search(r"^OLDEST_TRANSFORMERS=([\d.]+)$", ci, flags=re.M).group(1)
    assert oldest.split(".")[:2] == floor.split(".")[:2] and oldest.endswith(".0")  # the floor itself is tested
    runs = [line for line in ci.splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert runs[0].startswith("python3 -m venv .venv &&")  # the README's test command stays the first one run
    files = re.search(r'^RUNTIME_TESTS="([^"]+)"$', ci, flags=re.M).group(1).split()
    assert all((root / f).is_file() for f in files) and "tests/test_runtime_kernels.py" in files
    assert '"transformers==$OLDEST_TRANSFORMERS"' in ci and "$RUNTIME_TESTS" in ci


def test_static_cache_refuses_a_sliding_window_target(tmp_path):
    from dflash_compat.exceptions import RuntimeUnsupportedError

    model = tiny_target(2, vocab=32, use_sliding_window=True, sliding_window=3, max_window_layers=1,
                        layer_types=["full_attention", "sliding_attention", "sliding_attention", "sliding_attention"])
    with pytest.raises(RuntimeUnsupportedError, match="use the dynamic cache"):
        rt.greedy_generate(rt.target_for(model), PROMPT, max_new_tokens=4, cache="static")


def test_text_report_shows_the_near_tie_numbers_at_80_columns(tmp_path):
    import io

    from rich.console import Console

    from dflash_compat.cli.commands.smoke import first_divergence
    from dflash_compat.cli.console import render_smoke

    target, draft = _near_tie_pair(tmp_path)
    run = _smoke_run(target, draft, [PROMPT])
    for strict, word in ((False, "near-tie (not a failure)"), (True, "near-tie (--strict: fails)")):
        payload = build_payload(run, 0.0, strict=strict)
        buf = io.StringIO()
        div = [first_divergence(r["output_tokens"], r["baseline_tokens"]) for r in payload["results"]]
        render_smoke(payload, Console(file=buf, width=80, color_system=None), divergence=div)
        text = buf.getvalue()
        flat = " ".join(text.split())  # wrapped at 80 columns
        assert word in flat and "prompt 0, token 1: speculative 11, greedy 7: near-tie" in flat
        assert "block forward" in flat and "bfloat16 tolerance" in flat and "x over " in flat
        assert "attention auto: flash > math (cpu)" in flat
        assert max(len(line) for line in text.splitlines()) <= 80


# ---- CUDA graphs: the code path, run on CPU through torch.compile's eager backend ----------------------


def test_graphs_are_refused_off_cuda_and_without_the_static_cache(tmp_path):
    model, _, folder = make_pair(tmp_path, seed=1, block_size=4, target={"vocab": 32})
    target, draft = rt.target_for(model), load_draft(folder)
    with pytest.raises(InputError, match="static cache"):
        rt.spec_generate(draft, target, PROMPT, max_new_tokens=4, graphs=True)
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="CUDA device"):
            rt.spec_generate(draft, target, PROMPT, max_new_tokens=4, cache="static", graphs=True)


def test_graphed_verify_is_token_identical(tmp_path, monkeypatch):
    model, _, folder = make_pair(tmp_path, seed=6, block_size=4, target={"vocab": 32})
    target, draft = rt.target_for(model), load_draft(folder)
    eager = rt.spec_generate(draft, target, PROMPT, max_new_tokens=20, cache="static")
    lengths, drafts = [], []

    def compile_fn(fn):  # the graphs path with dynamo's eager backend: no GPU, no C++ compiler
        compiled = torch.compile(fn, backend="eager", dynamic=False)
        calls = drafts if getattr(fn, "__name__", "") == "_fixed_step" else lengths

        def run(first, *args, **kwargs):
            calls.append(tuple(first.shape[:2]) if calls is drafts else first.shape[1])
            return compiled(first, *args, **kwargs)

        return run

    monkeypatch.setattr(rt, "_COMPILE_FN", compile_fn)
    graphed = rt.spec_generate(draft, target, PROMPT, max_new_tokens=20, cache="static", graphs=True)
    assert graphed.tokens == eager.tokens and graphed.stats.acceptance_lengths == eager.stats.acceptance_lengths
    assert graphed.stats.cache == "static+graphs"
    assert lengths and set(lengths) == {4}  # only full verify blocks run compiled; the prefill eagerly
    # the draft step: every full block after the first (whose context is the whole prompt) on one shape
    full = sum(1 for d in graphed.stats.drafted if d == 3)  # steps with a full block (the last ones are shorter)
    assert len(drafts) == full - 1 and set(drafts) == {(1, 4)}
    plain = rt.greedy_generate(target, PROMPT, max_new_tokens=12, cache="static", graphs=True)
    assert plain.tokens == eager.tokens[:12] and lengths[-1] == 1 and plain.stats.cache == "static+graphs"
    used = len(lengths)
    again = rt.spec_generate(draft, target, PROMPT, max_new_tokens=20, cache="static")  # graphs off again
    assert again.tokens == eager.tokens and again.stats.cache == "static" and len(lengths) == used


def test_smoke_refuses_cuda_graphs_without_the_static_cache_in_one_line():
    from click.testing import CliRunner

    from dflash_compat.cli.app import cli

    for extra in ([], ["--cache", "static", "--device", "cpu"], ["--backend", "mlx", "--cache", "static"]):
        res = CliRunner().invoke(cli, ["smoke", "no/target", "--draft", "no/draft", "--cuda-graphs", *extra])
        assert res.exit_code == 2 and "--cuda-graphs" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_graphed_draft_step_matches_over_random_pairs(tmp_path, monkeypatch):
    monkeypatch.setattr(rt, "_COMPILE_FN", lambda fn: torch.compile(fn, backend="eager", dynamic=False))
    rng = random.Random(77)
    for i in range(3):  # v1 and v2 drafts, causal and sliding draft layers, random block sizes
        model, draft, prompt, _ = _random_pair(tmp_path, rng, i)
        target = rt.target_for(model)
        kw = dict(max_new_tokens=rng.randrange(8, 30), block_size=rng.randrange(2, draft.block_size + 1))
        eager = rt.spec_generate(draft, target, prompt, cache="static", **kw)
        graphed = rt.spec_generate(draft, target, prompt, cache="static", graphs=True, **kw)
        assert graphed.tokens == eager.tokens and graphed.stats.accepted == eager.stats.accepted, i


def test_recheck_reruns_the_differing_prompt_in_float32(tmp_path, monkeypatch):
    import json

    from click.testing import CliRunner

    from dflash_compat.cli.app import cli
    from dflash_compat.runtime.torch_target import TorchTarget

    tcfg = target_config(vocab=16)
    tiny_target(3, vocab=16).save_pretrained(str(tmp_path / "target"), safe_serialization=True)
    dcfg = draft_config(tcfg, block_size=4, mask_token_id=15)
    save_draft(tmp_path / "draft", dcfg, draft_state(dcfg, 4))
    monkeypatch.setattr(TorchTarget, "rollback", lambda self, cache, length: None)  # a real bug: it stays a bug
    args = ["smoke", str(tmp_path / "target"), "--draft", str(tmp_path / "draft"), "--prompt-ids", "1,2,3,4",
            "--max-new-tokens", "24", "--recheck", "-f", "json"]
    res = CliRunner().invoke(cli, [*args, "--dtype", "bfloat16"])
    assert res.exit_code == 1, res.output
    bad = [r for r in json.loads(res.stdout)["results"] if not r["lossless"]][0]
    assert bad["verdict"] == "differs" and bad["divergence"]["dtype"] == "bfloat16"
    assert bad["recheck"]["dtype"] == "float32" and bad["recheck"]["lossless"] is False
    assert isinstance(bad["recheck"]["differs_at"], int)
    res = CliRunner().invoke(cli, [*args, "--dtype", "float32"])
    bad = [r for r in json.loads(res.stdout)["results"] if not r["lossless"]][0]
    assert bad["recheck"] == {"dtype": "float32", "skipped": "the run was float32 already"}
