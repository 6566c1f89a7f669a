"""tools/engine_src.py: the helper that unpacks the engine wheels for the citation tests (README,
"The tests that read the engines' own code"): only .py files, never outside the folder."""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("engine_src", ROOT / "tools" / "engine_src.py")
engine_src = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(engine_src)


def _wheel(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


def test_unpacks_the_python_sources_only(tmp_path):
    wheel = _wheel(tmp_path / "x-1.0-py3-none-any.whl", {"x/a.py": "A = 1\n", "x/k.so": "binary",
                                                          "x-1.0.dist-info/METADATA": "Name: x"})
    assert engine_src.unpack(wheel, tmp_path / "x-1.0") == 1
    assert (tmp_path / "x-1.0" / "x" / "a.py").read_text() == "A = 1\n"
    assert not (tmp_path / "x-1.0" / "x" / "k.so").exists()


def test_refuses_a_member_outside_the_folder(tmp_path):
    wheel = _wheel(tmp_path / "evil-1.0-py3-none-any.whl", {"../escaped.py": "x = 1\n"})
    with pytest.raises(SystemExit, match="leaves the folder"):
        engine_src.unpack(wheel, tmp_path / "out" / "evil-1.0")
    assert not (tmp_path / "out" / "escaped.py").exists() and not (tmp_path / "escaped.py").exists()


def test_every_pinned_engine_has_a_package_name():
    from dflash_compat.engines.registry import ENGINES
    from dflash_compat.engines.store import newest_versions

    assert {e for e in newest_versions() if ENGINES[e].package} <= set(engine_src.PACKAGES)
    # the folder names the citation tests look for
    assert engine_src.PACKAGES["mlx-lm"][1] == "mlx_lm"
