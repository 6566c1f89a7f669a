"""The launch reader never hangs and places every word: the shell lexer fed every character after every
word and shell construct, generated shell and YAML (hypothesis), alias bombs, and the per-file size and time
bounds. The guard below is a hang guard (a test that loops forever fails after minutes instead of stalling
CI), not a speed limit."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

import pytest

from dflash_compat.launch.parse import find_launch
from dflash_compat.launch.shellwords import ShellSyntaxError, split_commands
from dflash_compat.launch.sources import LaunchFileError, candidates
from dflash_compat.pipeline.launch import MAX_BYTES, LaunchSettings, check_file

HANG_GUARD_S = 300


@contextmanager
def hang_guard(seconds: int = HANG_GUARD_S):
    """Fail (instead of hanging) when the body runs for `seconds`: SIGALRM interrupts a Python loop."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def _hung(signum, frame):
        raise AssertionError(f"hang guard: still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# every construct the lexer must step over (each once made `run()` call `word()` forever, or could)
CONSTRUCTS = [
    "a", "vllm serve m", "X=(a b 'c d')", "X+=(e)", "A[1]=(x)", "f() { vllm serve x; }", "function g { :; }",
    "case $a in x) echo;; (y) :;; esac", "(( i++ ))", "$((1 + 2))", "(cd /tmp && ls)", "echo $(date)",
    "echo $(echo \")\")", "diff <(a) >(b)", "cat <<EOF\nbody )\nEOF", "cat <<-'E'\n\tx\n\tE", "a <<< w", "{ a; }",
    "a && b || c | d & e; f", "# comment", "a \\\n b", "'q'", '"d $X ${Y:-z}"', "${X:+alt}", "${#X}", "${X%y}",
    "`date`", "$'a\\nb'", '$"t"', "2>&1 >log", "&> out", "a >| b", "${{ matrix.x }}", "$$ $? $@ $1", "!", "x=$(",
    "if a; then b; elif c; then d; else e; fi", "while :; do :; done", "[[ -n $x ]]", "@(x|y)", "a=b c=d",
]
CHARS = [chr(b) for b in range(256)]


def _lex(text: str) -> None:
    try:
        commands = split_commands(text)
    except ShellSyntaxError:
        return
    n_lines = text.count("\n") + 1
    for cmd in commands:
        for w in cmd.words:
            assert 1 <= w.line <= n_lines and w.column >= 1, (text, w)
            for i in range(len(w.text) + 1):
                line, column = w.at(i)
                assert 1 <= line <= n_lines and column >= 1, (text, w, i)


def test_every_character_after_every_construct_ends():
    """Each of the 256 byte values (as characters) after, between and before every construct: the lexer
    returns words, or refuses with one ShellSyntaxError; any other outcome (a progress assertion, an
    exception, a hang) fails."""
    with hang_guard():
        for construct in CONSTRUCTS:
            for ch in CHARS:
                _lex(construct + ch)
                _lex(construct + ch + " " + construct)
                _lex(ch + construct)
                _lex(construct + "(" + ch)


def test_the_constructs_read_as_a_shell_reads_them():
    words = [[w.text for w in c.words] for c in split_commands(
        "ARGS=(--port 8080 -c 4096)\nlog() { echo \"$*\"; }\ncase $X in a) vllm serve m1 ;; *) :;; esac\n"
        "(( n = 2 ))\n(cd /m && llama-server -m t.gguf)\ndiff <(a) b\n")]
    # (`{`, `then`, `do`... stay words here; the launch reader skips them where a command starts)
    assert words == [["ARGS=(--port 8080 -c 4096)"], ["log"], ["{", "echo", "$*"], ["}"], ["case", "$X", "in", "a"],
                     ["vllm", "serve", "m1"], ["*"], [":"], ["esac"], ["n", "=", "2"], ["cd", "/m"],
                     ["llama-server", "-m", "t.gguf"], ["diff", "<(a)", "b"]]
    # an array is not a value the file gives: a later use of it stays unresolved
    [_, cmd] = split_commands("X=(a b)\necho $X ${X[0]}\n")
    assert [w.unresolved for w in cmd.words] == [(), ("X",), ("${X[0]}",)]


def test_a_launch_inside_a_function_or_case_is_found():
    text = ("serve() {\n  exec vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2\n}\n"
            "case \"$1\" in\n  llama) llama-server -m t.gguf -md d.gguf ;;\nesac\nif true; then sglang serve T; fi\n")
    _, cands = candidates("run.sh", text)
    found = [(x.engine, x.line, x.column) for c in cands if (x := find_launch(c))]
    assert found == [("vllm", 2, 8), ("llama.cpp", 5, 10), ("sglang", 7, 15)]


@pytest.mark.parametrize("text", [
    # sh -c in single quotes, in double quotes with escapes, over lines, nested, in ANSI-C quotes
    "docker run img sh -c 'echo x; vllm serve m --tensor-parallel-size 2'",
    "bash -lc \"echo \\\"x\\\" \\$HOME; vllm serve m --tensor-parallel-size 2\"",
    "sh -c \\\n  \"cd /m &&\n   vllm serve m --tensor-parallel-size 2\"",
    "sh -c 'sh -c \"vllm serve m --tensor-parallel-size 2\"'",
    "bash -c $'echo \\'x\\'\\nvllm serve m --tensor-parallel-size 2'",
])
def test_a_script_inside_sh_c_is_placed_exactly(text):
    _, cands = candidates("run.sh", text)
    [launch] = [x for c in cands if (x := find_launch(c))]
    at = text.index("vllm serve")
    line = text.count("\n", 0, at) + 1
    assert (launch.line, launch.column) == (line, at - (text.rfind("\n", 0, at) + 1) + 1)
    tp = launch.where["tp"]
    assert text.split("\n")[tp.line - 1][tp.column - 1] == "2"


def test_an_alias_bomb_is_read_once_per_node():
    """Nine levels of anchors, each aliasing the one before ten times: 10**9 paths, ~100 nodes."""
    lines = ["a0: &a0 {containers: [{name: x, image: busybox, command: [sh, -c, 'echo hi']}]}"]
    for k in range(1, 10):
        lines.append(f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 10) + "]")
    with hang_guard():
        kind, cands = candidates("bomb.yaml", "\n".join(lines) + "\n")
    assert kind == "kubernetes" and len(cands) == 2  # the container once, its sh -c script once


def test_a_file_past_the_size_bound_is_one_line(tmp_path):
    big = tmp_path / "run.sh"
    big.write_text("a" * (MAX_BYTES + 1))
    result = check_file(str(big), LaunchSettings(pair=False))
    assert result.error == "larger than 4 MiB; not a launch file" and not result.launches


def test_a_file_past_the_time_bound_is_one_line(tmp_path):
    """The time bound (60 s of CPU time by default) ends the reading of one file with one line; set to 0 here,
    so any file with more than a thousand steps passes it, whatever the machine's speed."""
    path = tmp_path / "run.sh"
    path.write_text("vllm serve m --port 1\n" * 2000)
    result = check_file(str(path), LaunchSettings(pair=False, read_seconds=0))
    assert result.error == "not read within 0 s of CPU time (the bound for one launch file)" and result.error_line == 0
    yaml_path = tmp_path / "k.yaml"
    yaml_path.write_text("items:\n" + "".join(f"  - {{name: n{i}, value: v}}\n" for i in range(2000)))
    assert check_file(str(yaml_path), LaunchSettings(pair=False, read_seconds=0)).error.startswith("not read within")


def _assert_words_in_bounds(text: str, cands) -> None:
    lines = text.split("\n")
    for c in cands:
        for w in c.words:
            assert 1 <= w.line <= len(lines) and 1 <= w.column <= len(lines[w.line - 1]) + 1, (text, w)


def test_generated_shell_always_ends():
    """Property: any sequence of shell fragments (words, quotes, operators, constructs, odd characters)
    is read to its end or refused with one ShellSyntaxError, and every word lies inside the text."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    fragment = st.one_of(st.sampled_from(CONSTRUCTS), st.sampled_from(list("()<>{}[];&|$`'\"\\#!=\n\t *@?~%^")),
                         st.text(alphabet="abc-_./=:,0123456789", min_size=1, max_size=6),
                         st.text(max_size=3))

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(fragment, max_size=20).map("".join))
    def check(text):
        try:
            _, cands = candidates("gen.sh", text)
        except LaunchFileError:
            return
        _assert_words_in_bounds(text, cands)
        for c in cands:
            find_launch(c)

    with hang_guard():
        check()


def test_generated_yaml_scalars_are_placed_exactly():
    """Property: YAML written by PyYAML's emitter in every scalar style (plain, single- and double-quoted
    with escapes, literal and folded blocks, long lines folded at a small width) is read back by
    `scalar_text` to exactly the value PyYAML composes, each character at the file position it came from."""
    import yaml
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from dflash_compat.launch.shellwords import Lines
    from dflash_compat.launch.yamltext import _offsets, walk

    value = st.text(alphabet=st.characters(blacklist_categories=("Cs",), max_codepoint=0x2030), max_size=60)
    styles = st.sampled_from([None, "'", '"', "|", ">"])

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(st.tuples(value, styles), min_size=1, max_size=4), st.integers(min_value=10, max_value=80))
    def check(items, width):
        doc = {"command": [v for v, _ in items]}
        style = items[0][1]
        text = yaml.dump(doc, default_style=style, width=width, allow_unicode=True)
        lines = Lines(text)
        for node in walk(yaml.compose(text, Loader=yaml.SafeLoader)):
            if not isinstance(node, yaml.ScalarNode):
                continue
            got = _offsets(node, text)
            assert got is not None and got[0] == node.value, (text, node.value, got and got[0])
            for k, ch in enumerate(node.value):
                src = text[got[1][k]]
                # a character is where it is written, or where the escape / fold / quote that makes it is
                assert src == ch or src in "\\'\n\r \t\x85\u2028\u2029" or ch in " \n", (text, k, ch, src)
            lines.pos(got[1][-1])

    with hang_guard():
        check()


def test_generated_compose_and_manifests_always_end():
    """Property: compose files, manifests and SkyPilot tasks whose commands are generated shell end, and
    every word lies in the file."""
    import yaml
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    script = st.lists(st.one_of(st.sampled_from(CONSTRUCTS), st.text(max_size=4)), max_size=6).map(" ".join)
    shapes = st.sampled_from(["compose", "k8s", "sky", "workflow"])

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(shapes, script, st.sampled_from([None, "|", ">", '"']))
    def check(shape, body, style):
        doc = {"compose": {"services": {"s": {"image": "vllm/vllm-openai:v0.34.0", "command": ["sh", "-c", body]}}},
               "k8s": {"kind": "Pod", "spec": {"containers": [{"name": "c", "command": ["bash", "-c"],
                                                                "args": [body]}]}},
               "sky": {"envs": {"A": "1"}, "run": body},
               "workflow": {"on": "push", "jobs": {"j": {"steps": [{"run": body}]}}}}[shape]
        text = yaml.dump(doc, default_style=style, allow_unicode=True)
        try:
            _, cands = candidates("gen.yaml", text)
        except LaunchFileError:
            return
        _assert_words_in_bounds(text, cands)

    with hang_guard():
        check()
