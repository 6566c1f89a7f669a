"""Shell text -> commands of words, each word with the line and column it starts at in the user's file.

POSIX shell quoting, as `shlex.split` applies it (the tests compare the two on every quoting form), plus
what shlex does not do and a launch file needs: positions, backslash-newline continuations, command
separators (`;`, `&&`, `||`, `|`, `&`, newlines), comments, and parameter expansion of variables the
same file assigned (`$NAME`, `${NAME}`, `${NAME:-default}`), never inside single quotes. Nothing is
executed: a command substitution `$(...)` or a variable the file does not assign stays unexpanded and
is recorded in the word's `unresolved`, so that no value is guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from dflash_compat.exceptions import InputError

__all__ = ["Word", "Command", "ShellSyntaxError", "split_commands", "ASSIGNMENT"]

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# a redirection operator at a word boundary: [n]>, >>, <, <<, <<-, <<<, >&n, &>, >|, <>
_REDIRECT = re.compile(r"(?P<op>(?:\d+|&)?(?:<<<|<<-|<<|>>|>\||<>|>&|<&|>|<))(?P<dup>(?:\d+|-)(?=[\s;&|)]|$))?")
# a position in the scanned text (0-based line, 0-based column) -> (1-based line, 1-based column) in the file
PosMap = Callable[[int, int], tuple[int, int]]


class ShellSyntaxError(InputError):
    """Unbalanced quotes or an unterminated expansion: the launch cannot be read."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line, self.column = line, column


@dataclass(frozen=True)
class Word:
    text: str  # after quote removal and expansion
    line: int  # 1-based, in the user's file
    column: int  # 1-based
    raw: str  # as written
    unresolved: tuple[str, ...] = ()  # variables (or `$(...)`) whose value the file does not give


@dataclass
class Command:
    words: list[Word] = field(default_factory=list)

    @property
    def line(self) -> int:
        return self.words[0].line if self.words else 0


def _identity(line: int, col: int) -> tuple[int, int]:
    return line + 1, col + 1


class _Scanner:
    def __init__(self, text: str, env: Mapping[str, str], pos: PosMap, fold: bool = False) -> None:
        self.s, self.env, self.pos, self.fold = text, env, pos, fold
        self.i = 0
        self.line = self.col = 0
        self.heredocs: list[tuple[str, bool]] = []
        self.commands: list[Command] = [Command()]

    def here(self) -> tuple[int, int]:
        return self.pos(self.line, self.col)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def advance(self, n: int = 1) -> str:
        out = self.s[self.i:self.i + n]
        for ch in out:
            if ch == "\n":
                self.line, self.col = self.line + 1, 0
            else:
                self.col += 1
        self.i += n
        return out

    def fail(self, what: str, at: tuple[int, int]) -> None:
        raise ShellSyntaxError(what, *at)

    def run(self) -> list[Command]:
        while self.i < len(self.s):
            ch = self.peek()
            redirect = _REDIRECT.match(self.s, self.i) if ch in "<>&0123456789" else None
            if ch in " \t\r" or (ch == "\n" and self.fold):
                self.advance()
            elif ch == "\\" and self.peek(1) == "\n":
                self.advance(2)
            elif ch == "\n" or ch == ";":
                self.advance()
                if ch == "\n":
                    self.skip_heredocs()
                self.end_command()
            elif redirect is not None:
                self.redirect(redirect)
            elif ch in "&|":
                self.advance(2 if self.peek(1) == ch else 1)
                self.end_command()
            elif ch == "#":
                while self.i < len(self.s) and self.peek() != "\n":
                    self.advance()
            elif ch in "()" and not self.commands[-1].words:
                self.advance()  # a subshell's parentheses
                self.end_command()
            else:
                self.word()
        return [c for c in self.commands if c.words]

    def end_command(self) -> None:
        if self.commands[-1].words:
            self.commands.append(Command())

    def redirect(self, m: "re.Match[str]") -> None:
        """A redirection is not an argument: `> log`, `2>&1`, `&> out`, `<<EOF` (its body is skipped at the
        end of the line), `<<< word`."""
        op = m.group("op")
        self.advance(m.end() - self.i)
        if m.group("dup"):
            return
        while self.peek() in (" ", "\t"):
            self.advance()
        if self.i >= len(self.s) or self.peek() in "\n;&|":
            return
        before = len(self.commands[-1].words)
        self.word()
        target = self.commands[-1].words[before:]
        del self.commands[-1].words[before:]
        if op in ("<<", "<<-") and target:
            self.heredocs.append((target[0].text, op == "<<-"))

    def skip_heredocs(self) -> None:
        """After the line that opened them, each here-document's body up to its delimiter line."""
        while self.heredocs:
            delimiter, tabs = self.heredocs.pop(0)
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                line = self.s[self.i:end if end >= 0 else len(self.s)]
                self.advance(len(line) + (1 if end >= 0 else 0))
                if (line.lstrip("\t") if tabs else line) == delimiter:
                    break

    def word(self) -> None:
        start, start_i = self.here(), self.i
        text: list[str] = []
        unresolved: list[str] = []
        while self.i < len(self.s):
            ch = self.peek()
            if ch in " \t\r\n;&|":
                break
            if ch == "\\":
                if self.peek(1) == "\n":
                    self.advance(2)
                    continue
                self.advance()
                text.append(self.advance())
            elif ch == "'":
                at = self.here()
                self.advance()
                j = self.s.find("'", self.i)
                if j < 0:
                    self.fail("unbalanced single quote", at)
                text.append(self.advance(j - self.i))
                self.advance()
            elif ch == '"':
                self.double_quoted(text, unresolved)
            elif ch == "$":
                self.expand(text, unresolved)
            elif ch == "`":
                at = self.here()
                self.advance()
                j = self.s.find("`", self.i)
                if j < 0:
                    self.fail("unbalanced backquote", at)
                text.append("`" + self.advance(j - self.i + 1))
                unresolved.append("`...`")
            elif ch in "()":
                break
            else:
                text.append(self.advance())
        raw = self.s[start_i:self.i]
        if raw:
            self.commands[-1].words.append(Word("".join(text), start[0], start[1], raw, tuple(unresolved)))

    def double_quoted(self, text: list[str], unresolved: list[str]) -> None:
        at = self.here()
        self.advance()
        while True:
            if self.i >= len(self.s):
                self.fail("unbalanced double quote", at)
            ch = self.peek()
            if ch == '"':
                self.advance()
                return
            if ch == "\\" and self.peek(1) in '$`"\\\n':
                self.advance()
                nxt = self.advance()
                if nxt != "\n":
                    text.append(nxt)
            elif ch == "$":
                self.expand(text, unresolved)
            elif ch == "`":
                j = self.s.find("`", self.i + 1)
                if j < 0:
                    self.fail("unbalanced backquote", self.here())
                text.append(self.advance(j - self.i + 1))
                unresolved.append("`...`")
            else:
                text.append(self.advance())

    def expand(self, text: list[str], unresolved: list[str]) -> None:
        at = self.here()
        nxt = self.peek(1)
        if nxt == "(":
            depth, j = 0, self.i + 1
            while j < len(self.s):
                depth += {"(": 1, ")": -1}.get(self.s[j], 0)
                if depth == 0:
                    break
                j += 1
            if depth:
                self.fail("unbalanced $(", at)
            text.append(self.advance(j - self.i + 1))
            unresolved.append("$(...)")
            return
        if nxt == "{":
            j = self.s.find("}", self.i)
            if j < 0:
                self.fail("unbalanced ${", at)
            body = self.s[self.i + 2:j]
            raw = self.advance(j - self.i + 1)
            m = _NAME.match(body)
            if not m:
                text.append(raw)
                unresolved.append(raw)
                return
            name, rest = m.group(), body[m.end():]
            if name in self.env:
                text.append(self.env[name])
            elif rest[:2] in (":-", ":=") or rest[:1] in ("-", "="):
                text.append(rest[2:] if rest[:1] == ":" else rest[1:])
            else:
                text.append(raw)
                unresolved.append(name)
            return
        m = _NAME.match(self.s, self.i + 1)
        if not m:
            text.append(self.advance())  # a lone `$` or `$1`-like parameter: kept as written
            if nxt.isdigit() or nxt in "@*#?":
                text.append(self.advance())
                unresolved.append("$" + nxt)
            return
        self.advance(m.end() - self.i)
        name = m.group()
        if name in self.env:
            text.append(self.env[name])
        else:
            text.append("$" + name)
            unresolved.append(name)


def split_commands(text: str, env: Optional[Mapping[str, str]] = None, pos: Optional[PosMap] = None,
                   assign: bool = True, fold: bool = False) -> list[Command]:
    """The commands in `text`, words expanded with `env`. With `assign`, a command made only of
    `NAME=value` words (or `export NAME=value ...`) adds to the variables the later commands see.
    `fold`: a newline separates words, not commands (YAML's folded `>` scalars)."""
    scope = dict(env or {})
    scanner = _Scanner(text, scope, pos or _identity, fold)
    # Expansion happens while scanning, so assignments must take effect before the next command is
    # scanned: scan command by command through the scanner's own loop, updating `scope` in between.
    commands = _scan_with_assignments(scanner, scope) if assign else scanner.run()
    return commands


def _scan_with_assignments(scanner: _Scanner, scope: dict[str, str]) -> list[Command]:
    done: list[Command] = []
    orig_end = scanner.end_command

    def end_command() -> None:
        cmd = scanner.commands[-1]
        if cmd.words:
            _apply_assignments(cmd, scope)
        orig_end()

    scanner.end_command = end_command  # type: ignore[method-assign]
    done = scanner.run()
    return done


def _apply_assignments(cmd: Command, scope: dict[str, str]) -> None:
    words = cmd.words[1:] if cmd.words[0].text in ("export", "readonly", "declare", "local") else cmd.words
    if words and all(ASSIGNMENT.match(w.text) for w in words):
        for w in words:
            name, _, value = w.text.partition("=")
            if w.unresolved:
                scope.pop(name, None)  # its value is unknown: later uses stay unresolved
            else:
                scope[name] = value
