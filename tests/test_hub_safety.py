"""What reaches the Hub, and how a Hub failure ends: paths that look local never leave the machine,
revisions are validated before any request or cache access, a failing or silent Hub is one line
within seconds, and an oversized file is refused from its metadata before any download (issues 12, 15).
Every Hub here is tests/hostile/fake_hub.py on 127.0.0.1; nothing reaches the network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dflash_compat.exceptions import InputError
from dflash_compat.resolve.hub import check_revision, is_repo_id
from tests.configs import QWEN3_8B, QWEN3_8B_DRAFT, write_model
from tests.hostile.fake_hub import FakeHub


@pytest.fixture(scope="module")
def hub():
    with FakeHub() as h:
        yield h


def run(args, tmp_path: Path, hub: FakeHub, **env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "DFLASH_CHECK_"))}
    env.update(HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf"), **env_extra)
    hub.requests.clear()
    start = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "dflash_compat", *args], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=60)
    res.seconds = time.monotonic() - start
    return res


def one_line(res) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout[-300:], res.stderr[-3000:])
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    return lines[0]


@pytest.mark.parametrize("rev", ["main", "v1.0", "refs/pr/1", "feature/x-y_z", "0123456789abcdef" * 2 + "01234567",
                                 "release-2026.05"])
def test_valid_revisions(rev):
    assert check_revision(rev, "x") == rev


@pytest.mark.parametrize("rev", ["../x", "a/../../b", "x..y", ".hidden", "a/.b", "a.lock", "a b", "a~1", "a^", "a:b",
                                 "a?", "a*", "a[0]", "a\\b", "@", "a@{1}", "", "a/", "/a", "a//b", "x.", "a\x00b",
                                 "a\nb", "x" * 256])
def test_hostile_revisions_are_refused(rev):
    with pytest.raises(InputError, match="revision|empty"):
        check_revision(rev, "x")


@pytest.mark.parametrize("name, ok", [("org/name", True), ("Qwen/Qwen3-8B", True), ("a/b", True),
                                      ("org/na--me", False), ("org/..", False), ("org/-x", False), ("org/x-", False),
                                      ("org/" + "m" * 97, False), ("gpt2", False), ("a/b/c", False), ("org/na me", False)])
def test_repo_id_grammar(name, ok):
    assert is_repo_id(name) is ok


@pytest.mark.parametrize("args", [
    ["org/model@../../../escape", "--draft", "d"],
    ["org/model", "--revision", "../x", "--draft", "d"],
    ["t", "--draft", "org/draft", "--draft-revision", "refs/../../x"],
    ["t", "--draft", "org/draft@a/..lock"],
])
def test_revisions_are_refused_before_any_request_or_cache_access(tmp_path, hub, args):
    write_model(tmp_path / "t", QWEN3_8B)
    write_model(tmp_path / "d", QWEN3_8B_DRAFT)
    res = run([*args, "--no-deep"], tmp_path, hub)
    assert "revision" in one_line(res)
    assert hub.requests == [] and not (tmp_path / "hf").exists()


@pytest.mark.parametrize("ref", ["t/nope", "./nope/x", "~/nope/x", "a/b/c", "nope", "t/" + "x" * 300, "/" + "y" * 5000])
def test_paths_that_look_local_never_reach_the_hub(tmp_path, hub, ref):
    write_model(tmp_path / "t", QWEN3_8B)
    write_model(tmp_path / "d", QWEN3_8B_DRAFT)
    res = run([ref, "--draft", "d", "--no-deep"], tmp_path, hub)
    assert "no such folder" in one_line(res)
    assert hub.requests == []


def test_a_hub_repo_is_fetched_through_the_fake_hub(tmp_path, hub):
    """The happy path the checks below depart from: paths-info, then the files, then the report."""
    hub.add("org/good", {"config.json": QWEN3_8B, "generation_config.json": {"eos_token_id": [151645, 7]}})
    write_model(tmp_path / "d", QWEN3_8B_DRAFT)
    res = run(["org/good", "--draft", "d", "--no-deep", "-f", "json"], tmp_path, hub)
    assert res.returncode == 0, res.stderr
    assert 7 in json.loads(res.stdout)["target"]["eos_token_ids"]
    assert ("POST", "/api/models/org/good/paths-info/main") in hub.requests


def test_a_hub_answering_500_is_one_line_without_retries(tmp_path, hub):
    hub.add("org/err", {"config.json": QWEN3_8B}, behaviour="error500")
    write_model(tmp_path / "d", QWEN3_8B_DRAFT)
    res = run(["org/err", "--draft", "d", "--no-deep"], tmp_path, hub)
    line = one_line(res)
    assert "not a local folder" in line and "org/err could not be reached" in line and "500" in line
    assert res.seconds < 10 and len(hub.requests) <= 2, (res.seconds, hub.requests)


def test_a_silent_hub_is_one_line_within_the_timeout(tmp_path, hub):
    hub.add("org/silent", {"config.json": QWEN3_8B}, behaviour="hang")
    write_model(tmp_path / "t", QWEN3_8B)
    res = run(["t", "--draft", "org/silent", "--no-deep"], tmp_path, hub, DFLASH_CHECK_HUB_TIMEOUT="2")
    assert "no answer within 2 s" in one_line(res)
    assert res.seconds < 10, res.seconds


def test_an_unknown_repo_names_both_readings(tmp_path, hub):
    write_model(tmp_path / "d", QWEN3_8B_DRAFT)
    line = one_line(run(["org/missing", "--draft", "d", "--no-deep"], tmp_path, hub))
    assert "no such folder" in line and "no Hub repo org/missing" in line


def test_an_oversized_config_is_refused_from_its_metadata(tmp_path, hub):
    hub.add("org/huge", {"config.json": QWEN3_8B}, declared_sizes={"config.json": 300 * 1024 * 1024})
    write_model(tmp_path / "d", QWEN3_8B_DRAFT)
    line = one_line(run(["org/huge", "--draft", "d", "--no-deep"], tmp_path, hub))
    assert "314572800 bytes" in line and "not downloaded" in line
    assert [r for r in hub.requests if "/resolve/" in r[1]] == []
