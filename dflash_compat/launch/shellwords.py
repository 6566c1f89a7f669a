"""Shell text -> commands of words, each word with the line and column it starts at in the user's file.

POSIX shell quoting, as `shlex.split` applies it (the tests compare the two on every quoting form), plus
what shlex does not do and a launch file needs: positions, backslash-newline continuations, command
separators (`;`, `&&`, `||`, `|`, `&`, newlines, parentheses, `{ }` groups), comments, redirections and
here-documents (skipped), and parameter expansion of variables the same file assigned (`$NAME`,
`${NAME}`, `${NAME:-default}`, `${NAME:+alt}`), never inside single quotes. Nothing is executed: a command
substitution `$(...)`, an arithmetic expansion, a process substitution `<(...)`, an array or a variable
the file does not assign stays unexpanded and is recorded in the word's `unresolved`, so that no value
is guessed.

Every loop of the scanner consumes at least one character per turn (the main loop asserts it), so any
input ends; a `Deadline` bounds the time a file may take.

Positions: the scanner reads a text whose character `i` sits at `pos(i)` = (line, column) in the user's
file (1-based). Each word keeps where each of its characters came from (`Word.at`), so a script inside a
word (`sh -c 'SCRIPT'`) is placed exactly too, however it was quoted.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

from dflash_compat.exceptions import InputError

__all__ = ["Word", "Command", "ShellSyntaxError", "ReadTimeout", "Deadline", "Lines", "Origin", "PosOrigin",
           "split_commands",
           "ASSIGNMENT", "PosFn", "RESERVED"]

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# `NAME=` / `NAME+=` / `NAME[i]=` right before a `(`: a bash array assignment
_ARRAY_HEAD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=$")
# a redirection operator at a word boundary: [n]>, >>, <, <<, <<-, <<<, >&n, &>, >|, <>
_REDIRECT = re.compile(r"(?P<op>(?:\d+|&)?(?:<<<|<<-|<<|>>|>\||<>|>&|<&|>|<))(?P<dup>(?:\d+|-)(?=[\s;&|)]|$))?")
# the characters that end an unquoted shell word, and the run of ordinary characters inside one
_PLAIN_SHELL = re.compile(r"[^\s;&|<>()\\'\"$`]+")
_PLAIN_WORDS = re.compile(r"[^\s\\'\"]+")
_DQ_PLAIN = re.compile(r"[^\"\\$`]+")
_DQ_PLAIN_WORDS = re.compile(r"[^\"\\]+")
# words that open or close a compound command where a command starts: not the command itself
RESERVED = frozenset({"then", "do", "else", "elif", "if", "while", "until", "!", "time", "fi", "done", "esac", "{",
                      "}"})
# bash $'...' escapes
_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v",
         "\\": "\\", "'": "'", '"': '"', "?": "?"}

# character i of a scanned text -> (line, column) in the user's file, both 1-based
PosFn = Callable[[int], tuple[int, int]]


class ShellSyntaxError(InputError):
    """Unbalanced quotes or an unterminated expansion: the launch cannot be read."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line, self.column = line, column


class ReadTimeout(InputError):
    """Reading one file took longer than its bound."""


class Deadline:
    """A time bound for reading one file: `check()` raises ReadTimeout once `seconds` of this process's CPU
    time have passed (CPU time, not the wall clock: a machine busy with other work does not make a file
    fail). Loops call `tick()`, which looks at the clock every 1024 calls (a clock read per character would
    cost more than the scan)."""

    __slots__ = ("seconds", "end", "count")

    def __init__(self, seconds: Optional[float]) -> None:
        self.seconds = seconds
        self.end = None if seconds is None else time.process_time() + seconds
        self.count = 0

    def tick(self) -> None:
        self.count += 1
        if self.end is not None and not self.count & 1023:
            self.check()

    def check(self) -> None:
        if self.end is not None and time.process_time() > self.end:
            raise ReadTimeout(f"not read within {self.seconds:g} s of CPU time (the bound for one launch file)")


_NO_DEADLINE = Deadline(None)


class Lines:
    """Offsets in one text -> (line, column), both 1-based; a column counts characters."""

    __slots__ = ("starts",)

    def __init__(self, text: str) -> None:
        starts = [0]
        find = text.find
        j = find("\n")
        while j >= 0:
            starts.append(j + 1)
            j = find("\n", j + 1)
        self.starts = starts

    def pos(self, offset: int) -> tuple[int, int]:
        k = bisect_right(self.starts, offset) - 1
        return k + 1, offset - self.starts[k] + 1


class Origin:
    """Where each character of a word's text came from: runs of the scanned text (`linear`: character k of
    the run is character base + k there) or a value put in at one place (an expanded variable, an escape)."""

    __slots__ = ("starts", "bases", "linear", "pos")

    def __init__(self, starts: Sequence[int], bases: Sequence[int], linear: Sequence[bool], pos: PosFn) -> None:
        self.starts, self.bases, self.linear, self.pos = starts, bases, linear, pos

    def at(self, i: int) -> tuple[int, int]:
        k = max(bisect_right(self.starts, i) - 1, 0)
        base = self.bases[k] + (i - self.starts[k] if self.linear[k] else 0)
        return self.pos(base)


class PosOrigin:
    """An origin given as a function (a YAML scalar's characters, read back from the file)."""

    __slots__ = ("at",)

    def __init__(self, pos: PosFn) -> None:
        self.at = pos


@dataclass(frozen=True)
class Word:
    text: str  # after quote removal and expansion
    line: int  # 1-based, in the user's file
    column: int  # 1-based
    raw: str  # as written
    unresolved: tuple[str, ...] = ()  # variables (or `$(...)`) whose value the file does not give
    origin: Optional[Origin | PosOrigin] = field(default=None, compare=False, repr=False)

    def at(self, i: int) -> tuple[int, int]:
        """The file position of character `i` of `text` (len(text): just past its last character)."""
        if self.origin is not None:
            return self.origin.at(i)
        if self.raw == self.text and "\n" not in self.text[:i]:
            return self.line, self.column + i
        return self.line, self.column


@dataclass
class Command:
    words: list[Word] = field(default_factory=list)

    @property
    def line(self) -> int:
        return self.words[0].line if self.words else 0


class _Scanner:
    """One pass over a text. `shell`: the shell's grammar (operators, comments, expansions); otherwise only
    whitespace separates words and quotes and backslashes are removed (compose's `command:` string, which
    no shell reads)."""

    def __init__(self, text: str, env: dict[str, str], pos: PosFn, *, shell: bool = True, assign: bool = False,
                 deadline: Deadline = _NO_DEADLINE, marks: Sequence[tuple[int, int, str]] = ()) -> None:
        self.s, self.n, self.env, self.pos = text, len(text), env, pos
        self.shell, self.assign, self.deadline = shell, assign, deadline
        self.marks = sorted(marks)
        self.i = 0
        self.heredocs: list[tuple[str, bool]] = []
        self.commands: list[Command] = [Command()]
        self._reset()

    # ------------------------------------------------------------------------------ building a word

    def _reset(self) -> None:
        self.buf: list[str] = []
        self.seg_t: list[int] = []
        self.seg_b: list[int] = []
        self.seg_l: list[bool] = []
        self.tlen = 0
        self.unres: list[str] = []

    def copy(self, n: int) -> None:
        """Take the next n characters of the text into the word as they are."""
        if n <= 0:
            return
        if not (self.seg_l and self.seg_l[-1] and self.seg_b[-1] + (self.tlen - self.seg_t[-1]) == self.i):
            self.seg_t.append(self.tlen)
            self.seg_b.append(self.i)
            self.seg_l.append(True)
        self.buf.append(self.s[self.i:self.i + n])
        self.tlen += n
        self.i += n

    def put(self, text: str, at: int) -> None:
        """Text that is not written as such (a variable's value, an escape), placed at character `at`."""
        if not text:
            return
        self.seg_t.append(self.tlen)
        self.seg_b.append(at)
        self.seg_l.append(False)
        self.buf.append(text)
        self.tlen += len(text)

    def fail(self, what: str, at: int) -> None:
        raise ShellSyntaxError(what, *self.pos(at))

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < self.n else ""

    # ----------------------------------------------------------------------------------- the loop

    def run(self) -> list[Command]:
        s, n = self.s, self.n
        while self.i < n:
            before = self.i
            self.deadline.tick()
            ch = s[self.i]
            if ch in " \t\r\f\v" or ch == "\n" and not self.shell:
                self.i += 1
            elif ch == "\\" and (s.startswith("\n", self.i + 1) or s.startswith("\r\n", self.i + 1)):
                self.i += 2 if s[self.i + 1] == "\n" else 3
            elif not self.shell:
                self.add(self.word())
            elif ch == "\n":
                self.i += 1
                self.skip_heredocs()
                self.end_command()
            elif ch == ";":
                self.i += 1
                self.end_command()
            elif ch in "<>" and self.peek(1) == "(":
                self.add(self.word())  # a process substitution is a word
            elif ch in "<>&0123456789" and (m := _REDIRECT.match(s, self.i)) is not None:
                self.redirect(m)
            elif ch in "&|":
                self.i += 2 if self.peek(1) in (ch, "&") else 1
                self.end_command()
            elif ch == "#":
                j = s.find("\n", self.i)
                self.i = n if j < 0 else j
            elif ch in "()":
                self.i += 1  # a subshell, `f()`, a `case` pattern's `)`, `((`: each ends the command before
                self.end_command()
            else:
                self.add(self.word())
            if self.i <= before:  # never loop: every turn consumes input (a bug here is a crash, not a hang)
                raise AssertionError(f"shell scanner made no progress at character {self.i}")
        self.end_command()
        return [c for c in self.commands if c.words]

    def add(self, word: Optional[Word]) -> None:
        if word is None:
            return
        self.commands[-1].words.append(word)

    def end_command(self) -> None:
        cmd = self.commands[-1]
        if cmd.words:
            if self.assign:
                _apply_assignments(cmd, self.env)
            self.commands.append(Command())

    def redirect(self, m: "re.Match[str]") -> None:
        """A redirection is not an argument: `> log`, `2>&1`, `&> out`, `<<EOF` (its body is skipped at the
        end of the line), `<<< word`."""
        op = m.group("op")
        self.i = m.end()
        if m.group("dup"):
            return
        while self.peek() in (" ", "\t"):
            self.i += 1
        if self.i >= self.n or self.peek() in "\n;&|()<>":
            return
        target = self.word()
        if op in ("<<", "<<-") and target is not None:
            self.heredocs.append((target.text, op == "<<-"))

    def skip_heredocs(self) -> None:
        """After the line that opened them, each here-document's body up to its delimiter line."""
        while self.heredocs:
            delimiter, tabs = self.heredocs.pop(0)
            while self.i < self.n:
                self.deadline.tick()
                end = self.s.find("\n", self.i)
                stop = end if end >= 0 else self.n
                line = self.s[self.i:stop].rstrip("\r")
                self.i = stop + 1 if end >= 0 else self.n
                if (line.lstrip("\t") if tabs else line) == delimiter:
                    break

    # ----------------------------------------------------------------------------------- one word

    def word(self) -> Optional[Word]:
        self._reset()
        start = self.i
        s, n, shell = self.s, self.n, self.shell
        plain = _PLAIN_SHELL if shell else _PLAIN_WORDS
        while self.i < n:
            self.deadline.tick()
            ch = s[self.i]
            if ch in " \t\r\n\f\v":
                break
            if shell and ch in ";&|<>()":
                if ch == "(" and self.i > start and _ARRAY_HEAD.match("".join(self.buf)) \
                        and len("".join(self.buf)) == self.i - start:
                    self.group(self.i, "array")
                    continue
                if ch in "<>" and self.i == start and self.peek(1) == "(":
                    self.group(self.i + 1, "<(...)" if ch == "<" else ">(...)")
                    continue
                break
            if ch == "\\":
                if s.startswith("\n", self.i + 1):
                    self.i += 2
                elif s.startswith("\r\n", self.i + 1):
                    self.i += 3
                elif self.i + 1 >= n:
                    self.copy(1)  # a trailing backslash stays (as POSIX shells keep it)
                else:
                    self.i += 1
                    self.copy(1)
            elif ch == "'":
                j = s.find("'", self.i + 1)
                if j < 0:
                    self.fail("unbalanced single quote", self.i)
                self.i += 1
                self.copy(j - self.i)
                self.i += 1
            elif ch == '"':
                self.double_quoted()
            elif shell and ch == "$":
                self.dollar(quoted=False)
            elif shell and ch == "`":
                self.backquote()
            else:
                m = plain.match(s, self.i)
                self.copy(m.end() - self.i if m else 1)
        if self.i == start:
            return None
        return self.finish(start)

    def finish(self, start: int) -> Word:
        text = "".join(self.buf)
        unresolved = self.unres
        if self.marks:
            unresolved = unresolved + [name for a, b, name in self.marks if a < self.i and b > start]
        line, column = self.pos(start)
        origin = Origin(self.seg_t, self.seg_b, self.seg_l, self.pos) if self.seg_t else None
        return Word(text, line, column, self.s[start:self.i], tuple(dict.fromkeys(unresolved)), origin)

    def group(self, open_at: int, what: str) -> None:
        """A parenthesised group inside a word (an array's `(...)`, a process substitution), kept as written
        and unresolved: its value is not computed."""
        j = self.balanced(open_at)
        if j < 0:
            self.fail(f"unbalanced ( in {what}", open_at)
        if what == "array":
            self.unres.append("".join(self.buf).rstrip("=+") + "=(...)")
        else:
            self.unres.append(what)
        self.copy(j + 1 - self.i)

    def balanced(self, j: int) -> int:
        """The index of the `)` that closes the `(` at j (quotes, escapes and nested groups skipped), or -1."""
        s, n = self.s, self.n
        depth = 0
        while j < n:
            self.deadline.tick()
            ch = s[j]
            if ch == "\\":
                j += 2
                continue
            if ch == "'":
                k = s.find("'", j + 1)
                if k < 0:
                    return -1
                j = k + 1
                continue
            if ch == '"' or ch == "`":
                k = j + 1
                while k < n and s[k] != ch:
                    k += 2 if s[k] == "\\" else 1
                if k >= n:
                    return -1
                j = k + 1
                continue
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    return j
            j += 1
        return -1

    def double_quoted(self) -> None:
        at = self.i
        self.i += 1
        s, n = self.s, self.n
        plain = _DQ_PLAIN if self.shell else _DQ_PLAIN_WORDS
        while True:
            self.deadline.tick()
            if self.i >= n:
                self.fail("unbalanced double quote", at)
            ch = s[self.i]
            if ch == '"':
                self.i += 1
                return
            nxt = self.peek(1)
            if ch == "\\" and (nxt in '$`"\\\n' if self.shell else nxt in '"\\\n') and nxt:
                if nxt == "\n":
                    self.i += 2
                else:
                    self.i += 1
                    self.copy(1)
            elif ch == "\\":
                self.copy(1)
            elif self.shell and ch == "$":
                self.dollar(quoted=True)
            elif self.shell and ch == "`":
                self.backquote()
            else:
                m = plain.match(s, self.i)
                self.copy(m.end() - self.i if m else 1)

    def backquote(self) -> None:
        at = self.i
        k = self.i + 1
        while k < self.n and self.s[k] != "`":
            k += 2 if self.s[k] == "\\" else 1
        if k >= self.n:
            self.fail("unbalanced backquote", at)
        self.copy(k + 1 - self.i)
        self.unres.append("`...`")

    def dollar(self, quoted: bool) -> None:
        at = self.i
        nxt = self.peek(1)
        if nxt == "(":  # $(...) and $((...)): never run
            j = self.balanced(self.i + 1)
            if j < 0:
                self.fail("unbalanced $(", at)
            self.copy(j + 1 - self.i)
            self.unres.append("$(...)")
            return
        if nxt == "{" and self.s.startswith("${{", self.i):  # a GitHub Actions expression, not the shell's
            j = self.s.find("}}", self.i + 3)
            if j >= 0:
                self.copy(j + 2 - self.i)
                self.unres.append(" ".join(self.s[at:j + 2].split()))
                return
        if nxt == "{":
            j = self.brace_end(self.i + 2)
            if j < 0:
                self.fail("unbalanced ${", at)
            self.parameter(self.s[self.i + 2:j], at, j + 1)
            return
        if nxt == "'" and not quoted:
            self.ansi_c(at)
            return
        if nxt == '"' and not quoted:  # $"..." (a translated string): as "..."
            self.i += 1
            self.double_quoted()
            return
        m = _NAME.match(self.s, self.i + 1)
        if m:
            name = m.group()
            if name in self.env:
                self.put(self.env[name], at)
                self.i = m.end()
            else:
                self.copy(m.end() - self.i)
                self.unres.append(name)
            return
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            self.copy(2)  # a positional or special parameter: its value is the caller's
            self.unres.append("$" + nxt)
            return
        self.copy(1)  # a lone `$` is itself

    def brace_end(self, j: int) -> int:
        """The `}` closing a `${` whose body starts at j (quotes and nested `${...}` skipped), or -1."""
        s, n = self.s, self.n
        depth = 1
        while j < n:
            self.deadline.tick()
            ch = s[j]
            if ch == "\\":
                j += 2
                continue
            if ch == "'":
                k = s.find("'", j + 1)
                if k < 0:
                    return -1
                j = k + 1
                continue
            if ch == '"':
                k = j + 1
                while k < n and s[k] != '"':
                    k += 2 if s[k] == "\\" else 1
                j = k + 1
                continue
            if ch == "$" and j + 1 < n and s[j + 1] == "{":
                depth += 1
                j += 2
                continue
            if ch == "}":
                depth -= 1
                if depth == 0:
                    return j
            j += 1
        return -1

    def parameter(self, body: str, at: int, end: int) -> None:
        """`${NAME}`, `${NAME:-word}` / `${NAME-word}` (and `=`), `${NAME:+word}`, `${NAME:?msg}`; any other
        form (`${#X}`, `${X%y}`, `${X[0]}`, `${!X}`) is unresolved. A default is the value of a variable the
        file does not set (the documented way to state one: `${TP:-1}`)."""
        raw_len = end - self.i
        m = _NAME.match(body)
        name = m.group() if m else ""
        op = body[m.end():] if m else ""
        colon = op[:1] == ":"
        kind = op[1:2] if colon else op[:1]
        if m and (not op or kind in ("-", "=", "+", "?") and len(op) >= (2 if colon else 1)):
            value = self.env.get(name)
            is_set = value is not None and (value != "" or not colon)
            if not op and value is not None:
                self.put(value, at)
                self.i = end
                return
            if kind in ("-", "="):
                if is_set:
                    self.put(value, at)
                else:
                    self.put_expanded(op[2:] if colon else op[1:], at)
                self.i = end
                return
            if kind == "+" and value is not None:
                if is_set:
                    self.put_expanded(op[2:] if colon else op[1:], at)
                self.i = end
                return
            if kind == "?" and is_set:
                self.put(value, at)
                self.i = end
                return
        self.copy(raw_len)
        self.unres.append(name if m and (not op or kind in ("+", "?")) else "${" + body + "}")

    def put_expanded(self, text: str, at: int) -> None:
        """A default value (`word` of `${X:-word}`): its quotes removed and its variables expanded, placed at
        the `$` that opened the expansion."""
        sub = _Scanner(text, self.env, lambda _i: self.pos(at), deadline=self.deadline)
        sub.whole()
        self.put("".join(sub.buf), at)
        self.unres.extend(sub.unres)

    def whole(self) -> None:
        """The whole text as one word's worth of characters (spaces kept): for default values."""
        s, n = self.s, self.n
        while self.i < n:
            self.deadline.tick()
            ch = s[self.i]
            if ch == "\\" and self.i + 1 < n:
                self.i += 1
                self.copy(1)
            elif ch == "'":
                j = s.find("'", self.i + 1)
                if j < 0:
                    self.copy(n - self.i)
                    break
                self.i += 1
                self.copy(j - self.i)
                self.i += 1
            elif ch == '"':
                try:
                    self.double_quoted()
                except ShellSyntaxError:
                    self.copy(n - self.i)
            elif ch == "$":
                try:
                    self.dollar(quoted=False)
                except ShellSyntaxError:
                    self.copy(n - self.i)
            else:
                self.copy(1)

    def ansi_c(self, at: int) -> None:
        """$'...': bash's escapes (\\n, \\t, \\xHH, \\', ...) decoded."""
        s, n = self.s, self.n
        k = self.i + 2
        while k < n and s[k] != "'":
            k += 2 if s[k] == "\\" else 1
        if k >= n:
            self.fail("unbalanced $'", at)
        self.i += 2
        while self.i < k:
            ch = s[self.i]
            if ch != "\\":
                self.copy(1)
                continue
            e = s[self.i + 1] if self.i + 1 < k else ""
            if e in _ANSI:
                self.put(_ANSI[e], self.i)
                self.i += 2
            elif e == "x" and re.match(r"[0-9A-Fa-f]{1,2}", s[self.i + 2:k]):
                digits = re.match(r"[0-9A-Fa-f]{1,2}", s[self.i + 2:k]).group()
                self.put(chr(int(digits, 16)), self.i)
                self.i += 2 + len(digits)
            else:
                self.copy(1)
        self.i = k + 1


def split_commands(text: str, env: Optional[Mapping[str, str]] = None, pos: Optional[PosFn] = None,
                   assign: bool = True, *, shell: bool = True, deadline: Optional[Deadline] = None,
                   marks: Sequence[tuple[int, int, str]] = ()) -> list[Command]:
    """The commands in `text`, words expanded with `env`. `pos` places character i of `text` in the user's
    file (default: `text` is the file). With `assign`, a command made only of `NAME=value` words (or
    `export NAME=value ...`) adds to the variables the later commands see; `unset NAME` removes one.
    `shell=False`: only quotes and whitespace are read (a string no shell sees). `marks`: (start, end, name)
    spans of `text` whose value is unknown (compose's own `${VAR}`): a word over one is unresolved."""
    scope = dict(env or {})
    if pos is None:
        pos = Lines(text).pos
    scanner = _Scanner(text, scope, pos, shell=shell, assign=assign and shell, deadline=deadline or _NO_DEADLINE,
                       marks=marks)
    return scanner.run()


def _apply_assignments(cmd: Command, scope: dict[str, str]) -> None:
    words = cmd.words
    if words[0].text == "unset":
        for w in words[1:]:
            scope.pop(w.text, None)
        return
    if words[0].text in ("export", "readonly", "declare", "local", "typeset"):
        words = [w for w in words[1:] if not w.text.startswith("-")]
    if words and all(ASSIGNMENT.match(w.text) for w in words):
        for w in words:
            name, _, value = w.text.partition("=")
            if w.unresolved:
                scope.pop(name, None)  # its value is unknown: later uses stay unresolved
            else:
                scope[name] = value
