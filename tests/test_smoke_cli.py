"""`dflash-check smoke`: the JSON report's shape (golden), exit codes, input errors, the broken-rollback catch.

Regenerate the shape golden after an intended change with:
DFLASH_UPDATE_GOLDEN=1 python -m pytest tests/test_smoke_cli.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from click.testing import CliRunner  # noqa: E402

from dflash_compat.cli.app import cli  # noqa: E402

from .tiny_dflash import draft_config, draft_state, save_draft, save_tokenizer, target_config, tiny_target  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden" / "smoke.shape.json"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A saved tiny target (with a word-level tokenizer), the same without tokenizer, and a draft."""
    root = tmp_path_factory.mktemp("smoke")
    tcfg = target_config(vocab=16)
    model = tiny_target(3, vocab=16)
    model.save_pretrained(str(root / "target"), safe_serialization=True)
    save_tokenizer(root / "target", 16)
    model.save_pretrained(str(root / "bare"), safe_serialization=True)
    dcfg = draft_config(tcfg, block_size=4, mask_token_id=15)
    save_draft(root / "draft", dcfg, draft_state(dcfg, 4))
    return root


def _smoke(models, *args, target="target"):
    torch.set_num_threads(1)
    res = CliRunner().invoke(cli, ["smoke", str(models / target), "--draft", str(models / "draft"), *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def _skeleton(value):
    """Keys and types only (timings and tokens cannot be golden)."""
    if isinstance(value, dict):
        return {k: _skeleton(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_skeleton(value[0])] if value else []
    return "null" if value is None else type(value).__name__


def test_json_report_shape_and_values(models):
    res = _smoke(models, "--prompt", "w1 w2 w3 w4 w5", "--prompt-ids", "3,1,4,1,5", "--max-new-tokens", "12", "-f", "json")
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    shape = _skeleton(payload)
    if os.environ.get("DFLASH_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(shape, indent=2) + "\n")
    assert shape == json.loads(GOLDEN.read_text()), "smoke JSON shape changed; see the module docstring"
    assert list(payload) == ["schema_version", "backend", "device", "dtype", "block_size", "temperature",
                             "runtime", "results", "summary"]
    rt_info = payload["runtime"]  # what ran: kernels, cache, the baseline the speed-up is against
    assert rt_info["attention"] == "auto: flash > math (cpu)" and rt_info["cache"] == "dynamic"
    assert set(rt_info["baselines_tokens_per_s"]) == {"greedy-loop", "generate"}
    assert rt_info["baseline"] == max(rt_info["baselines_tokens_per_s"], key=rt_info["baselines_tokens_per_s"].get)
    assert rt_info["strict"] is False and payload["summary"]["verdict"] == "lossless"
    assert (payload["schema_version"], payload["backend"], payload["device"], payload["dtype"]) == (1, "torch", "cpu", "float32")
    assert payload["block_size"] == 4 and payload["temperature"] == 0.0
    r0, r1 = payload["results"]
    assert r0["prompt_tokens"] == [1, 2, 3, 4, 5] and r1["prompt_tokens"] == [3, 1, 4, 1, 5]
    for i, r in enumerate(payload["results"]):
        assert r["prompt_index"] == i and r["lossless"] is True
        assert r["output_tokens"] == r["baseline_tokens"] and len(r["output_tokens"]) == 12  # generated ids only
        assert sum(r["acceptance_lengths"]) == 11
        assert r["mean_acceptance"] == pytest.approx(11 / len(r["acceptance_lengths"]))
        assert r["decode_tokens_per_s"] > 0 and r["baseline_tokens_per_s"] > 0
    s = payload["summary"]
    assert s["lossless"] is True and list(s["histogram"]) == ["1", "2", "3", "4"]
    assert sum(s["histogram"].values()) == len(r0["acceptance_lengths"]) + len(r1["acceptance_lengths"])
    assert s["speedup"] > 0


def test_text_report(models, tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("w1 w2 w3\n\nw4 w5 w6 w7\n")
    res = _smoke(models, "--prompts-file", str(prompts), "--max-new-tokens", "8", "--block-size", "3")
    assert res.exit_code == 0, res.output
    assert "block size 3" in res.stdout and "lossless, mean acceptance" in res.stdout
    assert res.stdout.count("yes") == 2 and "acceptance histogram" in res.stdout


def test_sampling_reports_lossless_as_null(models):
    res = _smoke(models, "--prompt-ids", "1,2,3", "--max-new-tokens", "8", "--temperature", "0.9", "--top-k", "5",
                 "--top-p", "0.9", "--seed", "3", "-f", "json")
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["temperature"] == 0.9
    assert payload["results"][0]["lossless"] is None and payload["summary"]["lossless"] is None
    assert len(payload["results"][0]["output_tokens"]) == 8


def test_min_acceptance_fails_with_exit_1(models):
    res = _smoke(models, "--prompt-ids", "1,2,3", "--max-new-tokens", "6", "--min-acceptance", "4.5")
    assert res.exit_code == 1
    assert "under --min-acceptance" in res.stdout


def test_a_target_that_cannot_decode_alone_is_refused_not_a_crash(models, monkeypatch):
    # e.g. a checkpoint whose own forward raises: not a DFlash problem, so exit 2 with the target named, never exit 3
    import functools

    from transformers import AutoModelForCausalLM

    target_class = type(AutoModelForCausalLM.from_pretrained(str(models / "target")))

    @functools.wraps(target_class.forward)  # the same signature for the checker's preflight
    def broken(self, *a, **k):
        raise RuntimeError("The size of tensor a (4) must match the size of tensor b (8)")

    monkeypatch.setattr(target_class, "forward", broken)
    res = _smoke(models, "--prompt-ids", "1,2,3", "--max-new-tokens", "4")
    assert res.exit_code == 2, res.output
    assert "the target fails plain greedy decoding on its own (The size of tensor a (4)" in res.stderr
    assert "internal error" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_broken_rollback_fails_with_exit_1(models, monkeypatch):
    from transformers import DynamicCache

    monkeypatch.setattr(DynamicCache, "crop", lambda self, n: None)
    res = _smoke(models, "--prompt-ids", "1,2,3,4", "--max-new-tokens", "24", "-f", "json")
    assert res.exit_code == 1
    payload = json.loads(res.stdout)
    assert payload["summary"]["lossless"] is False and payload["summary"]["verdict"] == "differs"
    bad = [r for r in payload["results"] if not r["lossless"]][0]
    div = bad["divergence"]  # measured again from clean forwards: the target clearly prefers the greedy token
    assert bad["verdict"] == div["verdict"] == "differs"
    assert div["gap"] > div["tolerance"] and div["dtype"] == "float32"
    assert div["spec_token"] == bad["output_tokens"][div["index"]] != div["baseline_token"]
    for forward in ("block", "single"):
        assert div[forward]["top1"] == div["baseline_token"]
    assert payload["results"][0]["output_tokens"] != payload["results"][0]["baseline_tokens"]


@pytest.mark.parametrize(
    "args,target,message",
    [
        (["--prompt", "w1 w2"], "bare", "no tokenizer"),
        ([], "bare", "--prompt-ids"),  # the default prompt is text, too
        (["--prompt-ids", "1,x"], "target", "comma-separated"),
        (["--prompt-ids", "1,,3"], "target", "comma-separated"),  # never silently [1, 3]
        (["--prompt-ids", "1,2,"], "target", "comma-separated"),
        (["--prompt-ids", "1,2", "--max-new-tokens", "100000000"], "target", "max_position_embeddings 8192"),
        (["--prompt-ids", "1,99"], "target", "outside the target's vocabulary"),
        (["--prompt-ids", "1,2", "--block-size", "5"], "target", "between 1 and the draft's block_size 4"),
        (["--prompt-ids", "1,2", "--top-p", "0"], "target", "--top-p"),
        (["--prompts-file", "/nonexistent/prompts.txt"], "target", "cannot read"),
    ],
)
def test_input_errors_exit_2(models, args, target, message):
    res = _smoke(models, *args, target=target)
    assert res.exit_code == 2, res.output
    assert message in res.stderr and "Traceback" not in res.output
    if "Usage:" not in res.stderr:  # click's own usage errors are multi-line; ours are one line
        assert res.stderr.count("\n") == 1 and res.stderr.startswith("dflash-check: error: "), repr(res.stderr)


def _broken_target(models, tmp_path, *, config=None, truncate=False):
    folder = tmp_path / "broken"
    shutil.copytree(models / "target", folder)
    if config:
        cfg = json.loads((folder / "config.json").read_text())
        cfg.update(config)
        (folder / "config.json").write_text(json.dumps(cfg))
    if truncate:
        data = (folder / "model.safetensors").read_bytes()
        (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    return folder


@pytest.mark.parametrize("change,message", [
    (dict(config={"num_hidden_layers": 5, "layer_types": ["full_attention"] * 5}), "missing model.layers.4."),
    (dict(config={"num_hidden_layers": 5}), "refuses its config.json"),  # 4 layer_types for 5 layers
    (dict(truncate=True), "cannot load its weights"),
])
def test_broken_target_checkpoint_exits_2_in_one_line(models, tmp_path, change, message):
    torch.set_num_threads(1)
    target = _broken_target(models, tmp_path, **change)
    res = CliRunner().invoke(cli, ["smoke", str(target), "--draft", str(models / "draft"), "--prompt-ids", "1,2"])
    assert res.exit_code == 2, res.output
    assert message in res.stderr and "lossless" not in res.stdout
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("dflash-check: error: "), repr(res.stderr)


def test_trust_remote_code_fetches_the_repos_code(models, monkeypatch):
    import huggingface_hub

    from dflash_compat.resolve import refs as resolve_mod

    seen = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download",
                        lambda repo, **kw: seen.append(kw["allow_patterns"]) or str(models / "target"))
    hub = resolve_mod.Resolved(ref="org/model", folder=models / "target", repo_id="org/model")
    resolve_mod.download_weights(hub)
    resolve_mod.download_weights(hub, trust_remote_code=True)
    assert "*.py" not in seen[0] and "*.py" in seen[1] and "*.safetensors" in seen[1]

    calls = []
    real = resolve_mod.download_weights
    monkeypatch.setattr(resolve_mod, "download_weights",
                        lambda r, **kw: calls.append((r.folder.name, kw)) or real(r, **kw))
    res = _smoke(models, "--prompt-ids", "1,2", "--max-new-tokens", "4", "--trust-remote-code", "-f", "json")
    assert res.exit_code == 0, res.output
    target_calls = [kw for name, kw in calls if name == "target"]
    assert target_calls and all(kw.get("trust_remote_code") for kw in target_calls)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_cuda_without_gpu_is_an_input_error(models):
    res = _smoke(models, "--prompt-ids", "1,2", "--device", "cuda")
    assert res.exit_code == 2 and "no CUDA GPU" in res.stderr


def test_smoke_help_imports_no_torch():
    probe = ("import sys\nfrom dflash_compat.cli.app import main\nsys.argv=['dflash-check','smoke','--help']\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print('HEAVY', [m for m in ('torch', 'transformers', 'safetensors') if m in sys.modules], file=sys.stderr)")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert "--prompt-ids" in res.stdout and "HEAVY []" in res.stderr, res.stderr


def test_threads_auto_and_override(models, monkeypatch):
    calls = []
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    base = ["smoke", str(models / "target"), "--draft", str(models / "draft"), "--prompt-ids", "1,2",
            "--max-new-tokens", "4", "-f", "json"]
    assert CliRunner().invoke(cli, base).exit_code == 0 and calls == [1]  # a tiny pair: one thread
    assert CliRunner().invoke(cli, base + ["--threads", "3"]).exit_code == 0 and calls[-1] == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert CliRunner().invoke(cli, base).exit_code == 0 and calls == [1, 3]  # the environment's choice stays
    res = CliRunner().invoke(cli, base + ["--threads", "2", "--backend", "mlx"])
    assert res.exit_code == 2 and "--threads is for --backend torch" in res.stderr


@pytest.mark.parametrize("args,message", [
    (["--temperature", "nan"], "'--temperature': 'nan' is not a finite number"),
    (["--temperature", "1e-300"], "temperature 1e-300"),
    (["--seed", str(2**64)], "seed"),
])
def test_sampling_values_that_would_crash_exit_2(models, args, message):
    res = _smoke(models, "--prompt-ids", "1,2", *args)
    assert res.exit_code == 2 and message in res.stderr and res.stderr.count("\n") == 1, res.output


def test_prompts_file_must_be_a_regular_file(models, tmp_path):
    res = _smoke(models, "--prompts-file", "/dev/zero")
    assert res.exit_code == 2 and "not a regular file" in res.stderr and res.stderr.count("\n") == 1
