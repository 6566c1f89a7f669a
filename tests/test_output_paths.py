"""Every file the commands write or read beside `check` follows the same rules (issue 15): profiles
(`probe --profile-out`), plots (`recommend --plot`) and converted drafts (`convert -o`) are never
written through a symlink, over a foreign file without --force, or into a model folder; prompt files,
profiles, settings files and companion files are bounded reads of regular files (a FIFO is one line,
never a hang)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.exceptions import InputError
from dflash_compat.liveprobe import profile as pf
from tests.test_convert import BASE, make_draft, tree_digest

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
DEAD_URL = "http://127.0.0.1:9"  # nothing listens: a run that got this far fails with a server error


def _invoke(*args) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args])


def _one_line_error(res) -> str:
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("dflash-check: error: "), res.stderr
    return lines[0]


def _bounded(fifo: Path, *args) -> object:
    """Run the CLI in a thread; a run that blocks on `fifo` is unblocked (a writer opens it) and fails."""
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("res", _invoke(*args)), daemon=True)
    worker.start()
    worker.join(30)
    if worker.is_alive():
        with open(fifo, "wb"):
            pass
        worker.join(5)
        pytest.fail(f"{args[0]} blocked on the FIFO {fifo.name}")
    return result["res"]


def _profile(path: Path) -> Path:
    doc = pf.make_profile(source="smoke", engine="torch", block_size=3, per_position=[0.9, 0.5], steps=10,
                          mean_acceptance=2.4, convention="test")
    pf.write_profile(str(path), doc)
    return path


# ---- probe --profile-out and recommend --plot -----------------------------------------------------


def test_probe_profile_out_symlink_is_refused_before_any_request(tmp_path):
    victim = tmp_path / "config.json"
    victim.write_text("{}")
    link = tmp_path / "profile.json"
    link.symlink_to(victim)
    error = _one_line_error(_invoke("probe", DEAD_URL, "--model", "m", "--profile-out", link))
    assert "symlink" in error and victim.read_text() == "{}"


def test_probe_profile_out_never_goes_into_the_reference_folder(tmp_path):
    ref = tmp_path / "target"
    ref.mkdir()
    (ref / "config.json").write_text("{}")
    error = _one_line_error(_invoke("probe", DEAD_URL, "--model", "m", "--reference", ref,
                                    "--profile-out", ref / "profile.json", "--force"))
    assert "model folder" in error and sorted(p.name for p in ref.iterdir()) == ["config.json"]


def test_probe_profile_out_foreign_file_needs_force(tmp_path):
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": true}')
    assert "--force" in _one_line_error(_invoke("probe", DEAD_URL, "--model", "m", "--profile-out", notes))
    assert notes.read_text() == '{"mine": true}'


def test_a_previous_profile_is_recognised_and_a_foreign_one_is_not(tmp_path):
    path = _profile(tmp_path / "p.json")
    assert pf.looks_like_profile(path.read_bytes())
    assert not pf.looks_like_profile(b'{"kind": "something else"}')
    pf.write_profile(str(path), json.loads(path.read_text()))  # replaced without force: it is ours
    foreign = tmp_path / "x.json"
    foreign.write_text("{}")
    with pytest.raises(InputError, match="--force"):
        pf.write_profile(str(foreign), {})
    assert foreign.read_text() == "{}"


def test_recommend_plot_symlink_is_refused(tmp_path):
    profile = _profile(tmp_path / "p.json")
    victim = tmp_path / "keep.png"
    victim.write_bytes(b"\x89PNG not ours")
    link = tmp_path / "plot.png"
    link.symlink_to(victim)
    assert "symlink" in _one_line_error(_invoke("recommend", "--profile", profile, "--plot", link))
    assert victim.read_bytes() == b"\x89PNG not ours" and link.is_symlink()


def test_recommend_plot_foreign_png_needs_force(tmp_path):
    profile = _profile(tmp_path / "p.json")
    other = tmp_path / "photo.png"
    other.write_bytes(b"\x89PNG\r\n\x1a\n someone's picture")
    assert "--force" in _one_line_error(_invoke("recommend", "--profile", profile, "--plot", other))
    assert other.read_bytes().endswith(b"someone's picture")


def test_recommend_replaces_its_own_plot(tmp_path):
    pytest.importorskip("matplotlib")
    profile, plot = _profile(tmp_path / "p.json"), tmp_path / "p.png"
    assert _invoke("recommend", "--profile", profile, "--plot", plot).exit_code == 0
    assert _invoke("recommend", "--profile", profile, "--plot", plot).exit_code == 0, "our plot is not recognised"
    assert plot.read_bytes().startswith(b"\x89PNG")


# ---- bounded reads ---------------------------------------------------------------------------------


@needs_fifo
def test_recommend_profile_fifo_is_one_line(tmp_path):
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    assert "FIFO" in _one_line_error(_bounded(fifo, "recommend", "--profile", fifo))


@needs_fifo
def test_probe_prompts_fifo_is_one_line(tmp_path):
    fifo = tmp_path / "prompts.jsonl"
    os.mkfifo(fifo)
    assert "FIFO" in _one_line_error(_bounded(fifo, "probe", DEAD_URL, "--model", "m", "--prompts", fifo))


def test_probe_prompts_from_dev_zero_is_one_line(tmp_path):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    assert "regular file" in _one_line_error(_invoke("probe", DEAD_URL, "--model", "m", "--prompts", "/dev/zero"))


@needs_fifo
def test_settings_file_fifo_is_one_line(tmp_path):
    fifo = tmp_path / "dflash-check.toml"
    os.mkfifo(fifo)
    assert "FIFO" in _one_line_error(_bounded(fifo, "check", "--config", fifo, "t", "--draft", "d"))


def test_settings_file_cannot_switch_on_force(tmp_path):
    cfg = tmp_path / "dflash-check.toml"
    cfg.write_text('force = true\n')
    assert "force" in _one_line_error(_invoke("check", "--config", cfg, "t", "--draft", "d"))


# ---- convert -o --------------------------------------------------------------------------------------


def test_convert_force_replaces_a_symlinked_output_itself_never_the_folder_it_points_to(tmp_path):
    src = make_draft(tmp_path / "d", BASE)
    elsewhere = tmp_path / "precious"
    elsewhere.mkdir()
    (elsewhere / "data.txt").write_text("keep")
    link = tmp_path / "out"
    link.symlink_to(elsewhere)
    assert "symlink" in _one_line_error(_invoke("convert", src, "--to", "speculators", "-o", link))
    res = _invoke("convert", src, "--to", "speculators", "-o", link, "--force")
    assert res.exit_code == 0, res.output
    assert (elsewhere / "data.txt").read_text() == "keep" and sorted(p.name for p in elsewhere.iterdir()) == ["data.txt"]
    assert not link.is_symlink() and (link / "config.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "out", "precious"]  # no backup link left behind


def test_convert_never_writes_into_the_hub_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    cache = tmp_path / "home" / "hf-cache"
    cache.mkdir(parents=True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    src = make_draft(tmp_path / "d", BASE)
    assert "model folder" in _one_line_error(_invoke("convert", src, "--to", "speculators", "-o", cache / "x"))
    res = _invoke("convert", src, "--to", "speculators", "-o", tmp_path / "home", "--force")
    assert "contains the model folder" in _one_line_error(res)
    assert list(cache.iterdir()) == []


def test_convert_never_writes_into_the_verifier_folder(tmp_path):
    src = make_draft(tmp_path / "d", BASE)
    verifier = tmp_path / "target"
    verifier.mkdir()
    (verifier / "config.json").write_text('{"architectures": ["Qwen3ForCausalLM"]}')
    res = _invoke("convert", src, "--to", "speculators", "--verifier", verifier, "-o", verifier / "draft")
    assert "model folder" in _one_line_error(res) and sorted(p.name for p in verifier.iterdir()) == ["config.json"]


@needs_fifo
def test_convert_refuses_a_fifo_companion_file(tmp_path):
    src = make_draft(tmp_path / "d", BASE)
    os.mkfifo(src / "mask_embedding.pt")
    before = tree_digest(src)
    assert "FIFO" in _one_line_error(_bounded(src / "mask_embedding.pt", "convert", src, "--to", "speculators",
                                              "-o", tmp_path / "out"))
    assert tree_digest(src) == before and not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]  # the temporary folder is gone


# ---- smoke --profile-out ---------------------------------------------------------------------------

TINY = Path(__file__).resolve().parent.parent / "examples" / "tiny-qwen3"


@pytest.mark.parametrize("where", ["symlink", "inside-target"])
def test_smoke_profile_out_is_refused_before_any_model_is_loaded(tmp_path, monkeypatch, where):
    from dflash_compat.cli.commands import smoke

    monkeypatch.setattr(smoke, "_run_with_progress", lambda *a: pytest.fail("loaded models before refusing"))
    target = TINY / "target"
    before = (target / "config.json").read_bytes()
    if where == "symlink":
        out = tmp_path / "profile.json"
        out.symlink_to(target / "config.json")
    else:
        out = target / "profile.json"
    res = _invoke("smoke", target, "--draft", TINY / "draft", "--prompt-ids", "1,2", "--profile-out", out)
    assert ("symlink" if where == "symlink" else "model folder") in _one_line_error(res)
    assert (target / "config.json").read_bytes() == before and not (target / "profile.json").exists()


def test_smoke_refuses_a_hostile_revision_before_loading(monkeypatch):
    from dflash_compat.cli.commands import smoke

    monkeypatch.setattr(smoke, "_run_with_progress", lambda *a: pytest.fail("loaded models before refusing"))
    res = _invoke("smoke", "org/model@../../escape", "--draft", TINY / "draft", "--prompt-ids", "1,2")
    assert "revision" in _one_line_error(res)


def _qwen_target(root: Path) -> Path:
    from tests.configs import QWEN3_8B

    (root / "t").mkdir()
    (root / "t" / "config.json").write_text(json.dumps(QWEN3_8B))
    return root / "t"


def test_init_draft_force_replaces_a_symlinked_output_itself(tmp_path):
    target = _qwen_target(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").symlink_to(elsewhere)
    args = ["init-draft", str(target), "-o", str(tmp_path / "out"), "--mask-token-id", "151669"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2 and "symlink" in res.output
    res = CliRunner().invoke(cli, [*args, "--force"])
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "out").is_symlink() and (tmp_path / "out" / "config.json").is_file()
    assert list(elsewhere.iterdir()) == []  # the folder the link named is untouched


def test_init_draft_error_lines_escape_control_bytes(tmp_path):
    target = _qwen_target(tmp_path)
    res = CliRunner().invoke(cli, ["init-draft", str(target), "-o", str(tmp_path / "new\x1b[2J" / "x")])
    assert res.exit_code == 2 and "\x1b" not in res.output and "\\x1b" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_train_resume_refuses_a_checkpoint_file_linked_out_of_the_folder(tmp_path):
    target = _qwen_target(tmp_path)
    out = tmp_path / "out" / "checkpoint"
    out.mkdir(parents=True)
    (out / "state.json").write_text('{"step": 1}')
    (tmp_path / "secret.safetensors").write_bytes(b"x")
    (out / "model.safetensors").symlink_to(tmp_path / "secret.safetensors")
    os.mkfifo(out / "optimizer.safetensors")
    res = CliRunner().invoke(cli, ["train", str(target), "--draft", str(target), "--data", str(tmp_path / "secret.safetensors"),
                                   "-o", str(tmp_path / "out"), "--resume"])
    assert res.exit_code == 2 and "outside the model folder" in res.output, res.output
    (out / "model.safetensors").unlink()
    (out / "model.safetensors").write_bytes(b"x")
    res = CliRunner().invoke(cli, ["train", str(target), "--draft", str(target), "--data", str(tmp_path / "secret.safetensors"),
                                   "-o", str(tmp_path / "out"), "--resume"])
    assert res.exit_code == 2 and "not a regular file" in res.output, res.output


def test_train_never_writes_into_the_hub_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    target = _qwen_target(tmp_path)
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    (tmp_path / "data.txt").write_text("text\n")
    res = CliRunner().invoke(cli, ["train", str(target), "--draft", str(target), "--data", str(tmp_path / "data.txt"),
                                   "-o", str(cache / "trained")])
    assert res.exit_code == 2 and "model folder" in res.output and not (cache / "trained").exists()
