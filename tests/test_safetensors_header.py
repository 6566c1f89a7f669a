"""Draft weight facts from safetensors headers only: local files, shards, the Hub API; never tensor data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.exceptions import WeightsError
from dflash_compat.files.safetensors_header import read_header, read_local_headers
from dflash_compat.inspection.weights import inspect_draft_weights
from dflash_compat.modelfacts import DraftWeights, Skipped
from dflash_compat.resolve.refs import Resolved
from tests.configs import QWEN3_8B_DRAFT, target, write_model
from tests.deep_helpers import draft_tensors, read_draft, tiny_draft, write_draft, write_safetensors

ROOT = Path(__file__).resolve().parent.parent
TINY = tiny_draft({"hidden_size": 64, "vocab_size": 1000})


def test_header_is_parsed(tmp_path):
    write_draft(tmp_path, TINY)
    w = read_draft(tmp_path)[1]
    assert w.files == ("model.safetensors",) and w.tensor_count == 25
    assert w.shapes["fc.weight"] == [64, 128] and w.dtype == "BF16" and w.dtypes == ("BF16",)
    assert w.metadata == {"format": "pt"} and w.incomplete == {}


def test_only_the_header_bytes_are_read(tmp_path, monkeypatch):
    n = write_safetensors(tmp_path / "model.safetensors", draft_tensors(TINY), data="garbage")
    read = []
    real_fdopen = os.fdopen  # read_header opens with os.open (O_NONBLOCK), then reads through os.fdopen

    class Spy:
        def __init__(self, fh):
            self.fh = fh

        def read(self, size=-1):
            assert size >= 0, "an unbounded read would pull in tensor data"
            data = self.fh.read(size)
            read.append(len(data))
            return data

        def fileno(self):
            return self.fh.fileno()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **kw: Spy(real_fdopen(fd, *a, **kw)))
    header = read_header(tmp_path / "model.safetensors")
    assert sum(read) == 8 + n  # the length prefix and the JSON header, nothing of the data section
    assert header.data_bytes_present == header.data_bytes_declared


def test_full_size_qwen3_8b_draft_from_a_sparse_file(tmp_path):
    # ~2 GB of tensor data declared, none written: the header alone is enough.
    write_draft(tmp_path, QWEN3_8B_DRAFT, data="sparse")
    w = read_draft(tmp_path)[1]
    assert w.shapes["fc.weight"] == [4096, 5 * 4096] and w.tensor_count == 3 + 5 * 11
    assert w.incomplete == {}


def test_garbage_data_passes_header_checks(tmp_path):
    # the data section is random bytes: only a reader that parses tensors would notice
    write_draft(tmp_path, TINY, data="garbage")
    assert isinstance(read_draft(tmp_path)[1], DraftWeights)


def test_short_data_section_is_a_finding_not_an_exception(tmp_path):
    write_draft(tmp_path, TINY, data="short")
    w = read_draft(tmp_path)[1]
    assert w.shapes["fc.weight"] == [64, 128]
    have, need = w.incomplete["model.safetensors"]
    assert have < need


@pytest.mark.parametrize("cut, message", [
    (5, r"truncated \(5 bytes\): no safetensors header"),
    (60, "truncated: the header needs"),
])
def test_truncated_header_is_a_weights_error(tmp_path, cut, message):
    p = tmp_path / "model.safetensors"
    write_safetensors(p, draft_tensors(TINY))
    p.write_bytes(p.read_bytes()[:cut])
    with pytest.raises(WeightsError, match=message):
        read_header(p)


@pytest.mark.parametrize("header, message", [
    (b"{not json", "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (json.dumps({"fc.weight": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 8]}}).encode(), "needs 32 bytes"),
    (json.dumps({"fc.weight": {"dtype": "BF16", "shape": [-1], "data_offsets": [0, 0]}}).encode(), "invalid shape"),
    (json.dumps({"fc.weight": {"shape": [1], "data_offsets": [0, 2]}}).encode(), "has no dtype"),
])
def test_corrupt_header_is_a_weights_error(tmp_path, header, message):
    p = tmp_path / "model.safetensors"
    p.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 64)
    with pytest.raises(WeightsError, match=message):
        read_header(p)


def test_absurd_header_length(tmp_path):
    p = tmp_path / "model.safetensors"
    p.write_bytes((10**12).to_bytes(8, "little") + b"{}")
    with pytest.raises(WeightsError, match="not a safetensors header"):
        read_header(p)


def _sharded(tmp_path: Path) -> Path:
    tensors = draft_tensors(TINY)
    names = sorted(tensors)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    wmap = {}
    for shard, keys in shards.items():
        write_safetensors(tmp_path / shard, {k: tensors[k] for k in keys})
        wmap.update({k: shard for k in keys})
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wmap}))
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    return tmp_path


def test_sharded_draft_honours_the_index(tmp_path):
    w = read_draft(_sharded(tmp_path))[1]
    assert len(w.files) == 2 and w.tensor_count == 25
    assert w.tensor_files["fc.weight"].startswith("model-0000")


def test_missing_shard_is_a_weights_error(tmp_path):
    folder = _sharded(tmp_path)
    (folder / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(WeightsError, match="shard model-00002-of-00002.safetensors .* is missing"):
        read_local_headers(folder)


def test_index_naming_a_tensor_its_shard_lacks(tmp_path):
    folder = _sharded(tmp_path)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["weight_map"]["layers.9.mlp.up_proj.weight"] = "model-00001-of-00002.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(WeightsError, match="its header does not"):
        read_local_headers(folder)


def test_index_shard_names_cannot_leave_the_folder(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"fc.weight": "../x.safetensors"}}))
    with pytest.raises(WeightsError, match="not a file name"):
        read_local_headers(tmp_path)


def _raw_header(path: Path, header: bytes, data: bytes = b"") -> Path:
    import struct

    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


@pytest.mark.parametrize("header", [
    b"[" * 1_000_000,  # nesting deep enough to exhaust the JSON parser's recursion
    b'{"w": {"dtype": "F32", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 4]}}',  # int too long
    b'{"w": {"dtype": "F32", "shape": [1' + b"0" * 400 + b'], "data_offsets": [0, 4]}}',  # float overflow
    b'{"w": {"dtype": "F4", "shape": [' + b",".join([b"9" * 4000] * 200) + b'], "data_offsets": [0, 4]}}',
])
def test_hostile_headers_are_weights_errors(tmp_path, header):
    f = _raw_header(tmp_path / "model.safetensors", header)
    with pytest.raises(WeightsError) as err:
        read_header(f)
    assert "\n" not in str(err.value) and len(str(err.value)) < 400


def test_sub_byte_sizes_are_integers(tmp_path):
    from dflash_compat.files.safetensors_header import tensor_bytes

    assert tensor_bytes("F4", [3]) == 2 and tensor_bytes("F6_E2M3", [5]) == 4
    assert tensor_bytes("BF16", [10**400]) == 2 * 10**400
    good = json.dumps({"w": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}).encode()
    assert read_header(_raw_header(tmp_path / "model.safetensors", good, b"\0\0")).tensors == {"w": ("F4", [3])}


def test_hostile_index_is_a_weights_error(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text('{"weight_map": ' + "[" * 1_000_000)
    with pytest.raises(WeightsError, match="unreadable index"):
        read_local_headers(tmp_path)


def test_local_index_without_shards_or_entries_is_a_weights_error(tmp_path):
    folder = _sharded(tmp_path)
    for shard in folder.glob("*.safetensors"):
        shard.unlink()
    with pytest.raises(WeightsError, match="missing"):
        read_local_headers(folder)
    with pytest.raises(WeightsError):
        inspect_draft_weights(Resolved(ref=str(folder), folder=folder))
    assert read_local_headers(folder, hub_snapshot=True) == []  # a config-only Hub snapshot
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": {}}))
    with pytest.raises(WeightsError, match="no weight_map"):
        read_local_headers(folder)


def test_hub_snapshot_index_without_shards_asks_the_hub(tmp_path, monkeypatch):
    import huggingface_hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda *a, **k: FakeApi(draft_tensors(TINY)))
    res = _hub_draft(tmp_path)
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"fc.weight": "model-00001-of-00002.safetensors"}}))
    w = inspect_draft_weights(res)
    assert w.shapes["fc.weight"] == [64, 128]


def test_cli_hostile_header_exits_2_with_one_line(tmp_path):
    t = write_model(tmp_path / "t", target())
    d = write_draft(tmp_path / "d", QWEN3_8B_DRAFT, data="sparse")
    _raw_header(d / "model.safetensors", b"[" * 1_000_000)
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--framework", "mlx"])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("dflash-check: error: model.safetensors: corrupt safetensors header")


def test_pickle_only_draft_is_not_opened(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04 not to be unpickled")
    w = inspect_draft_weights(Resolved(ref=str(tmp_path), folder=tmp_path))
    assert isinstance(w, Skipped) and w.reason == "pickle-only"


# --- Hub drafts: headers read remotely by huggingface_hub (faked: no network in tests) -----------------------


class FakeApi:
    """Stands in for HfApi: returns real huggingface_hub metadata objects built from local tensors."""

    calls: list = []

    def __init__(self, tensors=None, error=None):
        self.tensors, self.error = tensors, error

    def get_safetensors_metadata(self, repo_id, revision=None, token=None):
        from huggingface_hub.utils._safetensors import SafetensorsFileMetadata, SafetensorsRepoMetadata, TensorInfo

        FakeApi.calls.append((repo_id, revision))
        if self.error is not None:
            raise self.error
        infos, off = {}, 0
        for name, (dtype, shape) in self.tensors.items():
            n = 2
            for s in shape:
                n *= s
            infos[name] = TensorInfo(dtype=dtype, shape=shape, data_offsets=(off, off + n))
            off += n
        fmeta = SafetensorsFileMetadata(metadata={"format": "pt"}, tensors=infos)
        return SafetensorsRepoMetadata(metadata=None, sharded=False, weight_map={k: "model.safetensors" for k in infos},
                                       files_metadata={"model.safetensors": fmeta})


def _hub_draft(tmp_path):
    # What resolve() leaves for a Hub draft: a snapshot folder holding config.json only.
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    return Resolved(ref="org/draft", folder=tmp_path, repo_id="org/draft", revision="abc")


def test_hub_headers_through_huggingface_hub(tmp_path, monkeypatch):
    import huggingface_hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda *a, **k: FakeApi(draft_tensors(TINY)))
    FakeApi.calls.clear()
    res = _hub_draft(tmp_path)
    w = inspect_draft_weights(res)
    assert FakeApi.calls == [("org/draft", "abc")]
    assert w.shapes["fc.weight"] == [64, 128] and w.incomplete == {}


@pytest.mark.parametrize("error, skipped", [
    ("not-safetensors", "no-safetensors"),
    (ConnectionError("network is unreachable"), "hub-unreachable"),
])
def test_hub_failures_are_skips(tmp_path, monkeypatch, error, skipped):
    from huggingface_hub import errors

    if error == "not-safetensors":
        error = errors.NotASafetensorsRepoError("no model.safetensors")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    res = _hub_draft(tmp_path)
    w = inspect_draft_weights(res, api=FakeApi(error=error))
    assert isinstance(w, Skipped) and w.reason == skipped and w.detail


def test_hub_corrupt_header_is_a_weights_error(tmp_path, monkeypatch):
    from huggingface_hub import errors

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    res = _hub_draft(tmp_path)
    with pytest.raises(WeightsError, match="corrupt safetensors header on the Hub"):
        inspect_draft_weights(res, api=FakeApi(error=errors.SafetensorsParsingError("bad header")))


def test_offline_mode_does_not_ask_the_hub(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = _hub_draft(tmp_path)
    w = inspect_draft_weights(res, api=FakeApi(error=AssertionError("must not be called")))
    assert w.reason == "hub-offline"


# --- through the CLI -------------------------------------------------------------------------------------


def test_cli_truncated_draft_exits_2_with_one_line(tmp_path):
    t = write_model(tmp_path / "t", target())
    d = write_draft(tmp_path / "d", QWEN3_8B_DRAFT, data="sparse")
    with open(d / "model.safetensors", "r+b") as fh:
        fh.truncate(100)  # an interrupted download that stopped inside the header
    res = CliRunner().invoke(cli, [str(t), "--draft", str(d), "--framework", "mlx"])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("dflash-check: error: model.safetensors: truncated")


def test_header_reading_imports_nothing_heavy(tmp_path):
    write_draft(tmp_path, TINY)
    code = (
        "import sys; from pathlib import Path\n"
        "from tests.deep_helpers import read_draft\n"
        f"w = read_draft(Path({str(tmp_path)!r}))[1]; assert w.tensor_count\n"
        "heavy = [m for m in ('torch', 'numpy', 'safetensors', 'transformers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_shard_named_by_the_index_is_refused_without_blocking(tmp_path):
    # open() of a FIFO waits for a writer forever; read_header opens with O_NONBLOCK and checks fstat first
    os.mkfifo(tmp_path / "model-1.safetensors")
    with pytest.raises(WeightsError, match="model-1.safetensors: is a FIFO, not a regular file"):
        read_header(tmp_path / "model-1.safetensors")
