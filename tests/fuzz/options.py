"""Hypothesis strategies for command lines: `check`'s options and settings files, and the `smoke` options
that are validated before any model is loaded."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from .cases import PAIRS, TINY, Case
from .strategies import (
    HUGE_INTS,
    NASTY,
    config_cases,
    deep_config_cases,
    deep_full_config_cases,
    header_cases,
    hostile_values,
)

__all__ = ["check_option_cases", "smoke_option_cases", "subprocess_cases", "any_case", "KINDS"]

_INT_OPTIONS = ("--num-speculative-tokens", "--num-draft-tokens", "--tp", "--draft-tp", "--max-num-seqs",
                "--max-num-batched-tokens", "--dflash-block-size", "--draft-window-size", "--attn-dp-size",
                "--pp-size")
_TEXT_OPTIONS = ("--select", "--ignore", "--severity", "--quantization", "--draft-quantization", "--backend",
                 "--format", "--framework", "--revision", "--draft-revision", "--token")
_FLAGS = ("--strict", "--no-deep", "--enable-dp-lm-head", "--trust-remote-code", "--no-config")
_WORDS = ("DF1", "DF101", "DF3", "df101", "DF", "DF999", "DF101=error", "DF1=ignore", "DF101=fatal", "=", "DF101=",
          "vllm", "sglang", "mlx", "transformers", "fp8", "unquant", "awq", "json", "sarif", "main", "a" * 40,
          "refs/pr/1", "..", "x y", "-1", ",", ",,DF1,")


def _argv_text() -> st.SearchStrategy[str]:
    """What a real command line can carry: no NUL; surrogates only as surrogateescape'd bytes (U+DC80-DCFF)."""
    chars = st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))
    escaped = st.integers(0xDC80, 0xDCFF).map(chr)
    return st.one_of(st.sampled_from(_WORDS), st.sampled_from([s for s in NASTY if "\x00" not in s
                                                               and "\ud800" not in s and "\udfff" not in s]),
                     st.text(chars, max_size=30), st.lists(st.one_of(chars, escaped), max_size=6).map("".join))


def _int_text() -> st.SearchStrategy[str]:
    return st.one_of(st.integers(-3, 70).map(str), st.sampled_from(HUGE_INTS).map(str),
                     st.sampled_from(("1e3", "0x10", "1.5", "", " 7", "٣", "nan", "inf", "9" * 5000)), _argv_text())


@st.composite
def _check_args(draw) -> list[str]:
    args: list[str] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.integers(0, 9))
        if kind < 4:
            args += [draw(st.sampled_from(_INT_OPTIONS)), draw(_int_text())]
        elif kind < 7:
            args += [draw(st.sampled_from(_TEXT_OPTIONS)), draw(_argv_text())]
        elif kind == 7:
            args.append(draw(st.sampled_from(_FLAGS)))
        elif kind == 8:
            args += ["--output", draw(st.sampled_from(("out/report.txt", "out", "missing/dir/r.json", "target/r.json",
                                                       "draft/config.json", "target", "/dev/null", "out/" + "x" * 300)))]
        else:
            args += ["--adapter", draw(st.one_of(st.sampled_from(("gpt2", "nope", "shim.py", "missing.py",
                                                                  "draft/config.json", "/dev/zero")), _argv_text()))]
    return args


_SETTING_KEYS = ("target", "draft", "backends", "select", "ignore", "severity", "strict", "format", "output",
                 "num-speculative-tokens", "tp", "no-deep", "framework", "adapter", "token", "trust-remote-code",
                 "unknown-key", "revision")


def _toml_value(value: Any) -> str:
    """A TOML literal for a hostile value (strings via JSON quoting, which TOML mostly shares)."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = repr(value)
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(text, text)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value)) if value is not None else '""'


@st.composite
def _settings(draw) -> bytes:
    if draw(st.integers(0, 5)) == 0:
        return draw(st.one_of(st.binary(max_size=64), st.sampled_from((b"", b"[tool", b"a = ", b"\xff", b"x = 1\nx = 2"))))
    lines = []
    for key in draw(st.lists(st.sampled_from(_SETTING_KEYS), min_size=1, max_size=4, unique=True)):
        value = draw(st.one_of(hostile_values(), st.sampled_from(("target", "draft", "vllm", ["vllm"], 15, True))))
        try:
            lines.append(f"{key} = {_toml_value(value)}")
        except (RecursionError, ValueError):
            lines.append(f'{key} = "x"')
    return "\n".join(lines).encode("utf-8", "surrogatepass")


@st.composite
def check_option_cases(draw) -> Case:
    """`check` on a real pair with hostile options, target / draft arguments, settings files or shims."""
    pair = draw(st.sampled_from(tuple(PAIRS)))
    args = draw(_check_args())
    if "--no-deep" not in args and draw(st.integers(0, 7)):
        args.append("--no-deep")  # deep runs of full-size configs cost seconds: most option cases skip them
    settings = draw(_settings()) if draw(st.integers(0, 4)) == 0 else None
    target_arg, draft_arg = "target", "draft"
    if draw(st.integers(0, 5)) == 0:
        target_arg = draw(st.one_of(st.sampled_from(("missing", "./missing", "org/name", "a/b/c", "draft", "",
                                                     "target/config.json", "x" * 300, "org/" + "y" * 300, "~nobody/x",
                                                     "target@main", "org/name@" + "z" * 200)), _argv_text()))
    if draw(st.integers(0, 5)) == 0:
        draft_arg = draw(st.sampled_from(("target", "missing", "org/name", "draft@rev", "draft/config.json", ".")))
    return Case(pair, settings=settings, args=tuple(args), target_arg=target_arg, draft_arg=draft_arg,
                tags=("options",))


@st.composite
def smoke_option_cases(draw) -> Case:
    """`smoke` options refused before any model is loaded (the target folder does not exist, so a
    valid option set ends in one line too, within milliseconds)."""
    args: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        option = draw(st.sampled_from(("--temperature", "--top-p", "--top-k", "--seed", "--max-new-tokens",
                                       "--block-size", "--threads", "--prompt-ids", "--prompts-file", "--backend",
                                       "--min-acceptance", "--dtype", "--format", "--profile-out")))
        value = draw(st.one_of(_int_text(), st.sampled_from(("nan", "-0.0", "1e-300", "1e308", "inf", "2", "0.5",
                                                             "1,2,3", "1,,3", "-1", "/dev/zero", "missing.txt",
                                                             "draft/config.json", "mlx", "torch", "json"))))
        args += [option, value]
    return Case(TINY, command="smoke", args=tuple(args), target_arg="missing-target", tags=("smoke",))


@st.composite
def subprocess_cases(draw) -> Case:
    """Cases cheap enough to run as a real process: config mutations and options, configs only."""
    return draw(st.one_of(config_cases(), check_option_cases().filter(lambda c: "--no-deep" in c.args)))


KINDS = {
    "config": config_cases,
    "config-deep": deep_config_cases,
    "config-deep-full": deep_full_config_cases,
    "header": header_cases,
    "options": check_option_cases,
    "smoke": smoke_option_cases,
}


def any_case(weights: dict[str, int]) -> st.SearchStrategy[Case]:
    """A mix of every kind, drawn in proportion to `weights` (kind -> relative weight)."""
    kinds = [k for k, w in weights.items() for _ in range(w)]
    return st.sampled_from(kinds).flatmap(lambda k: KINDS[k]())

