"""The README's example commands work on the bundled examples."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "examples" / "tiny-qwen3"
DEMO = ROOT / "examples" / "demo"


def test_smoke_on_the_bundled_tiny_pair_is_lossless():
    pytest.importorskip("torch")
    res = CliRunner().invoke(
        cli,
        ["smoke", str(TINY / "target"), "--draft", str(TINY / "draft"), "--prompt", "w1 w2 w3 w4",
         "--max-new-tokens", "16", "--format", "json"],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["summary"]["lossless"] is True
    [result] = report["results"]
    assert len(result["output_tokens"]) == 16 and result["output_tokens"] == result["baseline_tokens"]


def test_deep_check_of_the_bundled_tiny_pair_reads_the_weights():
    pytest.importorskip("torch")
    res = CliRunner().invoke(cli, [str(TINY / "target"), "--draft", str(TINY / "draft"), "-f", "json"],
                             catch_exceptions=False)
    report = json.loads(res.output)
    assert report["draft"]["weights"]["checked"] is True
    assert report["target"]["layers_path"] == "model.layers"
    assert not [f for f in report["findings"] if f["severity"] == "error"], report["findings"]


@pytest.mark.slow
def test_make_tiny_pair_runs_from_an_install_and_rebuilds_the_bundled_pair(tmp_path):
    """The example imports only the installed package (no `tests.*`): run in isolated mode (-I) from
    another folder, it writes the same weights as the bundled pair."""
    pytest.importorskip("torch")
    import subprocess
    import sys

    script = ROOT / "examples" / "make_tiny_pair.py"
    assert "tests" not in {line.split()[1].split(".")[0] for line in script.read_text().splitlines()
                           if line.startswith(("import ", "from "))}
    res = subprocess.run([sys.executable, "-I", str(script), str(tmp_path / "pair")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    for name in ("draft/model.safetensors", "target/model.safetensors", "draft/config.json"):
        assert (tmp_path / "pair" / name).read_bytes() == (TINY / name).read_bytes(), name


def test_the_readme_first_command_on_the_demo_pair():
    """check passes for every backend; smoke on the held-out prompts with the README's settings
    (smoke's defaults: block 8, 64 new tokens) is lossless with tau >= 3. The speed-up is measured
    by benchmarks/bench_demo_pair.py and written down in docs/demo.md, not asserted here."""
    pytest.importorskip("torch")
    res = CliRunner().invoke(cli, [str(DEMO / "target"), "--draft", str(DEMO / "draft"), "-f", "json"],
                             catch_exceptions=False)
    report = json.loads(res.output)
    assert res.exit_code == 0 and set(report["summary"]["verdict"].values()) == {"pass"}, report["findings"]
    assert report["draft"]["weights"]["checked"] is True
    res = CliRunner().invoke(cli, ["smoke", str(DEMO / "target"), "--draft", str(DEMO / "draft"),
                                   "--prompts-file", str(DEMO / "prompts.txt"), "-f", "json"],
                            catch_exceptions=False)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)["summary"]
    assert summary["lossless"] is True and summary["mean_acceptance"] >= 3.0, summary


def test_dflash_package_decodes_the_demo_pair_like_our_runtime(monkeypatch):
    """The dflash package (0.1.0) loads the bundled draft and produces the same tokens, accepting the
    same proposals at every step, as our runtime."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("dflash")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from dflash_compat.runtime import torch_generate as rt

    from .tiny_dflash import reference_generate

    tokenizer = AutoTokenizer.from_pretrained(str(DEMO / "target"))
    target, draft = rt.load_target(DEMO / "target"), rt.load_draft(DEMO / "draft")
    model = AutoModelForCausalLM.from_pretrained(str(DEMO / "target"), dtype=torch.float32).eval()
    for line in (DEMO / "prompts.txt").read_text().splitlines()[:2]:
        prompt = tokenizer(line)["input_ids"]
        ours = rt.spec_generate(draft, target, prompt, max_new_tokens=48)
        theirs, lengths = reference_generate(DEMO / "draft", model, prompt, 48)
        assert ours.tokens == theirs and ours.stats.acceptance_lengths == lengths


def test_demo_prompts_are_held_out():
    """Each prompt of examples/demo/prompts.txt is the first def / class line of a held-out stdlib
    file and no line of any training file (so neither the target nor the draft's data saw it)."""
    pytest.importorskip("torch")  # the script imports it
    build = json.loads((DEMO / "build.json").read_text())
    if build["python"].rsplit(".", 1)[0] != ".".join(map(str, sys.version_info[:2])):
        pytest.skip(f"the demo was built from Python {build['python']}'s standard library")
    sys.path.insert(0, str(DEMO))
    try:
        import make_demo_pair as demo
    finally:
        sys.path.remove(str(DEMO))
    train_files, held_files = demo.stdlib_files()
    prompts = (DEMO / "prompts.txt").read_text().splitlines()
    assert len(prompts) == 8 and prompts == demo.held_out_prompts(held_files, train_files, 8)
    seen = {line.strip() for path in train_files for line in demo.read(path).splitlines()}
    assert not seen & set(prompts)
    assert not set(prompts) & set(demo.def_lines(train_files))
