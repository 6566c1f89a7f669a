"""The `serve` commands for MLX and transformers are run as printed, on the bundled demo pair, on the CPU:
each must exit 0 and print generated text. (vLLM and SGLang need a GPU and are not installed here; their
commands are checked by the rules in test_serve_cli.py.)

The runner needs dflash 0.1.0, installed --no-deps as the README's test command does; the tests skip
without it, and the MLX one without mlx.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli

ROOT = Path(__file__).resolve().parent.parent
DEMO = ("examples/demo/target", "--draft", "examples/demo/draft")
NEEDS = {"mlx": ("dflash", "mlx", "mlx_lm"), "transformers": ("dflash", "torch", "transformers")}


def _printed_argv(engine: str) -> list[str]:
    res = CliRunner().invoke(cli, ["serve", *DEMO, "--engine", engine, "-f", "json", "--no-deep"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["servable"] is True
    return doc["argv"]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["mlx", "transformers"])
def test_printed_command_generates_on_the_demo_pair(engine):
    for mod in NEEDS[engine]:
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed (pip install --no-deps dflash==0.1.0; the [{engine}] extra)")
    argv = _printed_argv(engine)
    assert argv[0] == "python"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip(), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr


def test_runner_refuses_without_dflash(monkeypatch, capsys):
    """Without the dflash package the runner says how to install it (one line, exit 2), no traceback."""
    from dflash_compat.serve import dflash_run

    monkeypatch.setitem(sys.modules, "dflash", None)  # `import dflash` raises ImportError
    assert dflash_run.main(["mlx", "--model", "t", "--draft", "d", "hi"]) == 2
    err = capsys.readouterr().err
    assert "pip install --no-deps dflash==0.1.0" in err and len(err.splitlines()) == 1


def test_the_runner_imports_neither_requests_nor_the_dflash_cli():
    """dflash/benchmark.py:11 imports requests, which --no-deps leaves out: the runner must not reach it."""
    src = (ROOT / "dflash_compat" / "serve" / "dflash_run.py").read_text()
    code = "\n".join(line for line in src.splitlines() if line.lstrip().startswith(("import ", "from ")))
    assert "requests" not in code and "benchmark" not in code and "dflash.cli" not in code


@pytest.mark.parametrize("prompt", ["--help", "-x", "a b; rm -rf ~", "$(id)"])
def test_a_prompt_reaches_the_runner_as_one_argument(prompt):
    """The printed argv ends with `-- PROMPT`: a prompt that looks like an option is still the prompt."""
    from dflash_compat.serve.dflash_run import build_parser

    res = CliRunner().invoke(cli, ["serve", *DEMO, "--engine", "mlx", "-f", "json", "--no-deep", "--prompt", prompt])
    assert res.exit_code == 0, res.output
    argv = json.loads(res.output)["argv"]
    args = build_parser().parse_args(argv[3:])
    assert args.prompt == prompt and args.backend == "mlx" and args.block_size == 8


def test_trust_remote_code_reaches_the_transformers_runner():
    from dflash_compat.serve.dflash_run import build_parser

    res = CliRunner().invoke(cli, ["serve", *DEMO, "--engine", "transformers", "-f", "json", "--no-deep",
                                   "--trust-remote-code"])
    assert res.exit_code == 0, res.output
    assert build_parser().parse_args(json.loads(res.output)["argv"][3:]).trust_remote_code is True
    res = CliRunner().invoke(cli, ["serve", *DEMO, "--engine", "transformers", "-f", "json", "--no-deep"])
    assert build_parser().parse_args(json.loads(res.output)["argv"][3:]).trust_remote_code is False
