"""`--help` and config-only checks must not import torch, transformers or mlx (they start fast without them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "transformers", "mlx", "mlx_lm", "safetensors", "accelerate", "numpy")

PROBE = """
import sys, json
from dflash_compat.cli import main
sys.argv = ["dflash-check", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
heavy = [m for m in {heavy!r} if m in sys.modules]
print("HEAVY=" + json.dumps(heavy), file=sys.stderr)
"""


def _loaded(args: list[str]) -> list[str]:
    res = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), json.dumps(args)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    line = [ln for ln in res.stderr.splitlines() if ln.startswith("HEAVY=")]
    assert line, res.stderr
    return json.loads(line[-1][len("HEAVY="):])


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["check", "--help"],
        ["rules"],
        ["rule", "DF101"],
        ["init-draft", "--help"],
        ["train", "--help"],
        ["init-draft", str(ROOT / "examples/qwen3-8b/target"), "-o", "/nonexistent/../tmp/x", "--mask-token-id", "9999999"],
        [str(ROOT / "examples/qwen3-8b/target"), "--draft", str(ROOT / "examples/qwen3-8b/draft"), "--no-deep"],
        [str(ROOT / "examples/qwen3-8b/target"), "--draft", str(ROOT / "examples/qwen3-8b/draft"), "--no-deep", "-f", "json"],
    ],
)
def test_no_heavy_imports(args):
    assert _loaded(args) == []


def test_probe_detects_a_heavy_import():
    # the probe itself must be able to fail: importing torch on purpose shows up
    res = subprocess.run(
        [sys.executable, "-c", "import torch\n" + PROBE.format(heavy=HEAVY), json.dumps(["--help"])],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert 'HEAVY=["torch"' in res.stderr
