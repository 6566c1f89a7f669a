"""The linter configured in pyproject.toml ([tool.ruff]) passes over the whole repository."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed (pip install -e '.[dev]')")
def test_ruff_check_passes():
    res = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
