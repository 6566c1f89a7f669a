"""Every hostile case through every command it applies to, in a subprocess: ends within budget, exits 0/1
with a report or 2 with one line, no traceback, every input file byte-identical (issue 15).

To add a command: add a Command to COMMANDS with the tags of the cases it applies to (and a budget if
it must import torch or mlx first). smoke refuses what a hostile folder holds before it imports torch or
mlx, so its rows keep the common budget; MLX rows run only where the runtimes read files differently
(tag "smoke-both"): the module stays near two minutes on two cores.

Cases are listed in tests/hostile/builder.py; a case whose hostility only that command reaches gets
a new tag there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest

from tests.hostile.builder import CASES, Case
from tests.hostile.fake_hub import FakeHub
from tests.hostile.harness import assert_contract, clean_env, run_cli, snapshot

# Seconds a run may take. A hostile input must be refused (or checked) before anything heavy is
# imported or built, so every row runs in the time of a config-only check.
BUDGET_S = 10.0
HARD_LIMIT_S = 30.0  # the run is killed here (a hang); the budget assertion fails long before


@dataclass(frozen=True)
class Command:
    name: str
    tags: frozenset[str]  # runs on the cases carrying any of these tags
    argv: Callable[[Case], list[str]]
    budget_s: float = BUDGET_S


def _smoke(case: Case, backend: str) -> list[str]:
    return ["smoke", case.target, "--draft", case.draft, "--backend", backend, "--prompt-ids", "1,2,3",
            "--max-new-tokens", "4", *case.smoke_args]


# adapt with an explicit role map and --framework mlx writes its shim (to stdout here) without building
# the model or importing transformers: the time goes to reading the hostile input only.
ADAPT_MAP = ("--framework", "mlx", "--map", "embed=model.embed_tokens", "--map", "layers=model.layers")
COMMANDS = [
    Command("check", frozenset({"pair", "output"}),
            lambda c: ["check", c.target, "--draft", c.draft, "--no-deep", *c.check_args]),
    Command("check-deep", frozenset({"prebuild"}), lambda c: ["check", c.target, "--draft", c.draft, *c.check_args]),
    Command("adapt", frozenset({"target", "adapt-only"}),
            lambda c: ["adapt", c.target, *(c.adapt_args or ADAPT_MAP)]),
    Command("smoke-torch", frozenset({"smoke", "smoke-both"}), lambda c: _smoke(c, "torch")),
    Command("smoke-mlx", frozenset({"smoke-both"}), lambda c: _smoke(c, "mlx")),
    # the output goes beside the case folder (every file in it must stay as it was) unless the case names one
    Command("convert", frozenset({"convert"}),
            lambda c: ["convert", c.draft, "--to", "speculators", *(c.convert_args or ("-o", "../converted"))]),
    # init-draft writes beside the case folder; the mask id spares the tokenizer files the cases lack, so
    # a readable target goes all the way through derivation, the write and the config check
    Command("init-draft", frozenset({"target", "init-draft"}),
            lambda c: ["init-draft", c.target, *(c.init_args or ("-o", "../draft-out", "--mask-token-id", "151669"))]),
    # train refuses a hostile --data or -o before torch is imported: the rows run in a config check's time
    Command("train", frozenset({"train"}), lambda c: ["train", c.target, "--draft", c.draft, *c.train_args]),
]

ROWS = [pytest.param(cmd, build, id=f"{cmd.name}:{build.__name__}")
        for build in CASES for cmd in COMMANDS if cmd.tags & build.tags]


@pytest.fixture(scope="module")
def hub():
    with FakeHub() as h:
        yield h


@pytest.mark.parametrize(("command", "build"), ROWS)
def test_hostile_case(command: Command, build, hub: FakeHub, tmp_path):
    root = tmp_path / "case"
    root.mkdir()
    case: Case = build(root, hub)
    before = snapshot(root)
    hub.requests.clear()
    res = run_cli(command.argv(case), root, clean_env(case.env, tmp_path / "hf"), max(HARD_LIMIT_S, 3 * command.budget_s))
    assert_contract(res, command.budget_s, before, snapshot(root))
    _expectations(case, res)
    if case.after is not None:
        case.after(hub)


def _expectations(case: Case, res) -> None:
    if case.expect_exit is not None:
        assert res.returncode == case.expect_exit, (res.returncode, res.stderr)
    if case.expect_text is not None:
        text = res.stderr if res.returncode == 2 else res.stdout
        assert case.expect_text in text, (case.expect_text, text[-2000:])

