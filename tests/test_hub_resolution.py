"""Hub repo ids resolve through huggingface_hub's cache, offline (a cache laid out as the library lays it out)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.configs import draft, target

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _cache_repo(hub_cache: Path, repo_id: str, files: dict, ref: str = "main", commit: str = COMMIT) -> Path:
    repo = hub_cache / f"models--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / ref).write_text(commit)
    for name, content in files.items():
        (snap / name).write_text(json.dumps(content))
    return snap


def _run(args, env_extra, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-m", "dflash_compat", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def test_offline_cached_repos_resolve_via_hf_home(tmp_path):
    hub = tmp_path / "hf" / "hub"
    _cache_repo(hub, "my-org/Target", {"config.json": target(), "generation_config.json": {"eos_token_id": [151645, 7]}})
    _cache_repo(hub, "z-lab/Draft", {"config.json": draft()})
    res = _run(["my-org/Target", "--draft", "z-lab/Draft", "--no-deep", "-f", "json"],
               {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}, tmp_path)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["target"]["source"] == "my-org/Target"
    assert report["draft"]["source"] == "z-lab/Draft"
    # generation_config.json was fetched too: its extra EOS id is known
    assert 7 in report["target"]["eos_token_ids"]


def test_revision_suffix_selects_a_ref(tmp_path):
    hub = tmp_path / "hub"
    _cache_repo(hub, "my-org/Target", {"config.json": target()})
    _cache_repo(hub, "z-lab/Draft", {"config.json": draft(hidden_size=2560)})
    _cache_repo(hub, "z-lab/Draft", {"config.json": draft()}, ref="v2", commit="f" * 40)
    env = {"HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1"}
    bad = _run(["my-org/Target", "--draft", "z-lab/Draft", "--no-deep", "-f", "json"], env, tmp_path)
    good = _run(["my-org/Target", "--draft", "z-lab/Draft@v2", "--no-deep", "-f", "json"], env, tmp_path)
    assert bad.returncode == 1 and good.returncode == 0, (bad.stderr, good.stderr)


def test_offline_and_not_cached_is_a_clear_error(tmp_path):
    res = _run(["my-org/Missing", "--draft", "z-lab/Draft", "--no-deep"],
               {"HF_HUB_CACHE": str(tmp_path / "empty"), "HF_HUB_OFFLINE": "1"}, tmp_path)
    assert res.returncode == 2
    assert "not in the local Hugging Face cache" in res.stderr
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_not_a_path_nor_repo_id(tmp_path):
    res = _run(["./does/not/exist", "--draft", "x", "--no-deep"], {"HF_HUB_OFFLINE": "1"}, tmp_path)
    assert res.returncode == 2 and "no such folder" in res.stderr
