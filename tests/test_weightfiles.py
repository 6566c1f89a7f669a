"""The checked weight-file lookup (dflash_compat.files.weightfiles): index names stay inside the folder,
only regular files are used, symlinks do not lead out (except into the Hub cache's blob store)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dflash_compat.exceptions import WeightsError, one_line
from dflash_compat.files.weightfiles import (
    INDEX_FILE,
    PickledShardsError,
    index_shards,
    local_weight_files,
    weight_paths,
)


def _index(folder: Path, wmap: dict) -> None:
    (folder / INDEX_FILE).write_text(json.dumps({"metadata": {}, "weight_map": wmap}))


@pytest.mark.parametrize("shard", ["../outside/x.safetensors", "/etc/passwd", "sub/x.safetensors", ".hidden",
                                   "..", "", "a\\b.safetensors", "x\0.safetensors"])
def test_index_names_must_be_plain_file_names(tmp_path, shard):
    _index(tmp_path, {"fc.weight": shard})
    with pytest.raises(WeightsError, match="is not a file name") as err:
        weight_paths(tmp_path, "draft d")
    assert "\n" not in str(err.value) and str(err.value).startswith("draft d: ")


@pytest.mark.parametrize("value", [5, None, ["x.safetensors"], {"a": 1}])
def test_non_string_index_values_are_one_line_errors(tmp_path, value):
    _index(tmp_path, {"fc.weight": "model.safetensors", "norm.weight": value})
    with pytest.raises(WeightsError, match="not a file name") as err:
        local_weight_files(tmp_path)
    assert "\n" not in str(err.value)


def test_listed_shards_are_checked_and_returned(tmp_path):
    for name in ("a.safetensors", "b.safetensors"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "stray.safetensors").write_bytes(b"x")  # not listed: not loaded
    _index(tmp_path, {"w1": "b.safetensors", "w2": "a.safetensors", "w3": "b.safetensors"})
    assert [p.name for p in weight_paths(tmp_path, "t")] == ["a.safetensors", "b.safetensors"]
    (tmp_path / "b.safetensors").unlink()
    with pytest.raises(WeightsError, match="shard b.safetensors listed in model.safetensors.index.json is missing"):
        weight_paths(tmp_path, "t")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifos_are_never_opened(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"x")
    os.mkfifo(tmp_path / "extra.safetensors")
    assert local_weight_files(tmp_path) == (["model.safetensors"], None)  # the checker skips it
    with pytest.raises(WeightsError, match="'extra.safetensors' is a FIFO, not a regular file"):
        weight_paths(tmp_path, "draft d")  # a runtime refuses the folder: loaders open files by name
    os.unlink(tmp_path / "extra.safetensors")
    os.mkfifo(tmp_path / INDEX_FILE)
    with pytest.raises(WeightsError, match="a FIFO, not a regular file"):
        index_shards(tmp_path / INDEX_FILE)  # returns at once: safe_read opens with O_NONBLOCK, then fstat


def test_symlinks_out_of_the_folder_are_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.safetensors").write_bytes(b"x")
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").symlink_to(outside / "x.safetensors")
    with pytest.raises(WeightsError, match="outside the model folder"):
        weight_paths(model, "target t")
    (model / "model.safetensors").unlink()
    (model / "real.safetensors").write_bytes(b"x")
    (model / "model.safetensors").symlink_to("real.safetensors")  # inside: fine
    assert [p.name for p in weight_paths(model, "t")] == ["model.safetensors", "real.safetensors"]
    (model / INDEX_FILE).symlink_to(outside / "x.safetensors")
    with pytest.raises(WeightsError, match="outside the model folder"):
        local_weight_files(model)


def test_hub_cache_snapshots_may_link_into_their_blob_store(tmp_path):
    repo = tmp_path / "hub" / "models--org--name"
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / "abc123").write_bytes(b"x")
    snap = repo / "snapshots" / "0123"
    snap.mkdir(parents=True)
    (snap / "model.safetensors").symlink_to(Path("..") / ".." / "blobs" / "abc123")
    assert [p.name for p in weight_paths(snap, "draft org/name")] == ["model.safetensors"]
    other = tmp_path / "hub" / "models--org--other" / "blobs"
    other.mkdir(parents=True)
    (other / "zzz").write_bytes(b"x")
    (snap / "model.safetensors").unlink()
    (snap / "model.safetensors").symlink_to(other / "zzz")  # another repo's blob: outside
    with pytest.raises(WeightsError, match="outside the model folder"):
        weight_paths(snap, "draft org/name")


@pytest.mark.parametrize("exc", [ValueError(), OSError(), ValueError("first\nsecond"), RuntimeError("x" * 1000)])
def test_one_line_never_fails_on_odd_messages(exc):
    text = one_line(exc)
    assert text and "\n" not in text and len(text) < 320


def test_an_index_naming_pickles_is_refused_before_any_file_is_opened(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04 a pickle")
    _index(tmp_path, {"w1": "pytorch_model.bin", "w2": "model.safetensors"})
    with pytest.raises(PickledShardsError, match="pytorch_model.bin', not safetensors") as err:
        local_weight_files(tmp_path)
    assert err.value.names == ["pytorch_model.bin"]
    with pytest.raises(WeightsError, match="pickled weights are never opened"):
        weight_paths(tmp_path, "draft d")


@pytest.mark.parametrize(("text", "message"), [
    ('{"weight_map": {"w": ' + "[" * 5000 + "]" * 5000 + "}}", "nested more than"),
    ('{"weight_map": {"w": 1' + "0" * 400 + "}}", "digits"),
    ("{not json", "unreadable index: invalid JSON"),
])
def test_hostile_index_json_is_one_line(tmp_path, text, message):
    (tmp_path / INDEX_FILE).write_text(text)
    with pytest.raises(WeightsError, match=message) as err:
        local_weight_files(tmp_path)
    assert "\n" not in str(err.value)
