"""The DFlash evidence probe (enginefacts/evidence.py): text and compiled members of wheels and source
distributions searched for DFlash, and the real packages the docs cite where they are downloaded."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from dflash_compat.enginefacts.evidence import main, scan

WHEELS = Path("/work/wheels")


def _wheel(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return path


def _sdist(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_text_and_library_members_are_searched(tmp_path):
    ev = scan(_wheel(tmp_path / "x-1.0-py3-none-any.whl", {
        "x/spec.py": b"import os\nclass DFlashProposer:\n    pass\n# qwen3_dflash\n",
        "x/lib.so": b"\x7fELF\0\0\0LLM_ARCH_DFLASH\0other\0",
        "x/plain.py": b"print('eagle3')\n",
    }))
    assert ev.hits == {"x/spec.py": 2, "x/lib.so": 1} and ev.files == 3 and ev.has_dflash


def test_absence_is_reported_with_what_was_searched(tmp_path, capsys):
    path = _sdist(tmp_path / "y-2.0.tar.gz", {"y-2.0/pyproject.toml": b"[build-system]\n", "y-2.0/y.py": b"x = 1\n"})
    assert main([str(path)]) == 0
    assert capsys.readouterr().out == "y-2.0.tar.gz: no DFlash (2 files searched for dflash)\n"


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "z.whl"
    bad.write_bytes(b"not a zip")
    assert main([str(bad)]) == 2 and main([str(tmp_path / "missing.whl")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("evidence: ") for line in err)


REAL = {
    "tensorrt_llm-1.2.1.tar.gz": False,  # a wheel-stub source distribution: no TensorRT-LLM code on the index
    "ik_llama_cpp_python-0.1.5-cp312-cp312-manylinux_2_28_x86_64.whl": False,
    "lmdeploy-0.17.0-cp311-cp311-manylinux_2_28_x86_64.whl": False,
    "vllm_ascend-0.18.0.tar.gz": False,
    "llama_cpp_python-0.3.36.tar.gz": True,  # its vendored llama.cpp
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_the_real_packages_say_what_docs_engine_facts_records(name):
    path = WHEELS / name
    if not path.is_file():
        pytest.skip(f"{path} not downloaded")
    ev = scan(path)
    assert ev.has_dflash is REAL[name] and not ev.skipped, ev.line()
