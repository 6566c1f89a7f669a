"""`dflash-check launch`: every engine launch in the given files, each judged at the engine release it pins
by the one rule runner: the launch rules (DF901-DF999) and, where the pair can be read, every pair rule
for that engine, in one context (the pair loaded once)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from dflash_compat.checker import RuleContext, check_rules, select_rules
from dflash_compat.checker.findings import Finding
from dflash_compat.checker.report import Report, build_report, summarize
from dflash_compat.deployment.commands import options_of
from dflash_compat.engines.registry import Selected, Versions
from dflash_compat.exceptions import DFlashCompatError, InputError
from dflash_compat.launch.parse import Launch, find_launch
from dflash_compat.launch.shellwords import Deadline
from dflash_compat.launch.sources import MAX_SECONDS, LaunchFileError, candidates, pins_in
from dflash_compat.launch.versions import launch_versions

__all__ = ["LaunchSettings", "LaunchReport", "LaunchVersion", "FileResult", "check_file", "check_files", "check_text",
           "launch_options", "MAX_BYTES", "STDIN"]

# bounds of one launch file (docs/launch.md): larger is not a launch file; longer to read ends with an error
MAX_BYTES = 4 * 1024 * 1024
STDIN = "<stdin>"  # how `launch -` names standard input

# the backend (report name) each launch engine is judged as
BACKEND = {"vllm": "vllm", "sglang": "sglang", "llama.cpp": "llama.cpp", "mlx": "mlx", "transformers": "transformers"}


@dataclass(frozen=True)
class LaunchSettings:
    """`launch`'s own options, from check's."""

    select: Sequence[str] = ()
    ignore: Sequence[str] = ()
    severity: Mapping[str, str] = field(default_factory=dict)
    strict: bool = False
    engine_versions: Mapping[str, str] = field(default_factory=dict)  # --engine-version NAME==VERSION
    config_versions: Mapping[str, str] = field(default_factory=dict)  # the settings file's engine-versions
    deep: bool = False
    token: Optional[str] = None
    pair: bool = True  # run the pair check where the models can be read
    read_seconds: Optional[float] = MAX_SECONDS  # the time bound for reading one file (None: none)


@dataclass(frozen=True)
class LaunchVersion:
    """The launch engine's release as the report names it: as asked (pinned, --engine-version, ...), where
    that came from, and where the file writes it."""

    engine: str
    version: Optional[str]
    origin: str
    detail: str = ""

    @classmethod
    def of(cls, selected: Optional[Selected], engine: str) -> "LaunchVersion":
        if selected is None:
            return cls(engine, None, "default")
        detail = selected.detail or {"option": "--engine-version", "config": "engine-versions in the settings file",
                                     "default": "newest bundled"}.get(selected.origin, "")
        return cls(engine, selected.requested, selected.origin, detail)

    def describe(self) -> str:
        where = f": {self.detail}" if self.detail else ""
        return f"{self.engine} {self.version or '(unknown)'} ({self.origin}{where})"


@dataclass
class LaunchReport:
    launch: Launch
    version: LaunchVersion
    report: Report
    fixed: Optional[list[str]] = None  # the corrected argv (None: nothing to correct)

    @property
    def command(self) -> str:
        return " ".join(shlex.quote(w.text) for w in self.launch.words)

    def to_dict(self) -> dict[str, Any]:
        launch = self.launch
        out = {
            "file": launch.file, "line": launch.line, "column": launch.column, "kind": launch.kind,
            "context": launch.context, "engine": launch.engine,
            "engine_version": {"version": self.version.version, "origin": self.version.origin,
                               "detail": self.version.detail},
            "image": launch.image, "command": [w.text for w in launch.words],
            "settings": {k: v for k, v in sorted(launch.settings.items()) if v is not None},
            "report": self.report.to_dict(),
        }
        if self.fixed is not None:
            out["fixed_command"] = self.fixed
        return out


@dataclass
class FileResult:
    file: str
    kind: str
    launches: list[LaunchReport]
    # a file that could not be read (invalid YAML, a Helm template, too large, too slow): its one-line reason
    # and line; its launches are none, the other files are judged all the same
    error: Optional[str] = None
    error_line: int = 0

    @property
    def error_text(self) -> str:
        """`FILE:LINE: REASON`, as `dflash-check: error:` prints it."""
        where = f"{self.file}:{self.error_line}" if self.error_line else self.file
        return f"{where}: {self.error}"


def launch_options(launch: Launch) -> dict[str, Any]:
    """The launch's settings as CheckOptions fields (deployment.commands.options_of, the one reading every door
    shares)."""
    from dataclasses import asdict

    return {k: v for k, v in asdict(options_of(launch)).items() if k not in ("deep", "trust_remote_code", "adapter",
                                                                              "token")}


def _placed(f: Finding, ctx: RuleContext, reads: Mapping[str, Sequence[str]]) -> Finding:
    """A pair finding with the launch line it concerns first: the setting the rule reads (`Rule.reads`), else
    the draft (where the launch names the model whose config the finding is about), else the launch itself."""
    if any(getattr(loc, "artifact", None) == "launch" for loc in f.locations):
        return f  # a launch rule's finding: placed by the rule
    settings = reads.get(f.code, ())
    at = next((s for s in settings if s in ctx.launch.where), None)
    if at is None and "draft" in ctx.launch.where and any(loc.artifact == "draft" for loc in f.locations):
        at = "draft"
    elif at is None and "target" in ctx.launch.where and any(loc.artifact == "target" for loc in f.locations):
        at = "target"
    return replace(f, locations=[ctx.at(at), *f.locations])


def _pair_refs(launch: Launch, settings: LaunchSettings) -> tuple[Optional[str], str]:
    """(why the pair of this launch cannot be checked, what kind of reason): `option` (--no-pair),
    `not-speculative` (no draft, no speculative setting: nothing to judge), `not-dflash`, `variable`, `no-draft`,
    `no-target`; (None, "") when it names both models."""
    if not launch.speculative:
        return None, "not-speculative"
    if not settings.pair:
        return "--no-pair", "option"
    method = {"vllm": "method", "sglang": "algorithm", "llama.cpp": "spec_type"}.get(launch.engine)
    value = launch.settings.get(method) if method else None
    if isinstance(value, str) and method not in launch.unresolved and not _means_dflash(value):
        shown = "speculative method" if launch.engine != "llama.cpp" else "speculative type"
        return f"the {shown} is {value!r}, not DFlash", "not-dflash"
    for ref in ("target", "draft"):
        if ref in launch.unresolved:
            names = ", ".join("$" + n if not n.startswith(("$", "`")) else n for n in launch.unresolved[ref][1])
            return f"the {ref} comes from {names}", "variable"
        if not isinstance(launch.settings.get(ref), str) or not launch.settings.get(ref):
            return f"the launch names no {ref}", "no-draft" if ref == "draft" else "no-target"
    return None, ""


def _means_dflash(value: str) -> bool:
    """A speculative method / algorithm / type that names DFlash (or DSpark, its sibling), however spelled:
    the launch means to run a DFlash draft, so its pair is judged even where the engine refuses the spelling
    (DF912 says so)."""
    low = value.lower()
    return "dflash" in low or "dspark" in low


def _context(launch: Launch, earlier: Sequence[Launch], settings: LaunchSettings,
             versions: Versions) -> RuleContext:
    """The one context of this launch: the pair (loaded once, with its deep facts when asked) where it can
    be read, and the launch line."""
    options = options_of(launch, deep=settings.deep, token=settings.token)
    extra = dict(launch=launch, earlier=tuple(earlier))
    skipped, kind = _pair_refs(launch, settings)
    if skipped is None and kind == "":
        from dflash_compat.pipeline.check import CheckRequest, build_context

        req = CheckRequest(target=launch.settings["target"], draft=launch.settings["draft"],
                           backends=[BACKEND[launch.engine]], options=options,
                           revision=_str(launch.settings.get("revision")),
                           draft_revision=_str(launch.settings.get("draft_revision")), token=settings.token)
        try:
            ctx, _ = build_context(req, versions, **extra)
            return ctx
        except DFlashCompatError as e:
            skipped, kind = " ".join(str(e).split()), "unreadable"
    return RuleContext(options=options, versions=versions, pair_skipped=skipped, pair_skip_kind=kind, **extra)


def _str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def _judge(launch: Launch, earlier: Sequence[Launch], pins: Mapping[str, tuple[str, int]],
           settings: LaunchSettings, rules: Sequence[Any]) -> LaunchReport:
    versions = launch_versions(launch, pins, settings.engine_versions, settings.config_versions)
    ctx = _context(launch, earlier, settings, versions)
    backend = BACKEND[launch.engine]
    # without the pair, only the launch rules speak (the pair rules would all be skipped for it)
    chosen = rules if ctx.has_pair else [r for r in rules if "launch" in r.needs]
    results = check_rules(ctx, chosen, [backend], severity=settings.severity)
    reads = {r.code: r.reads for r in chosen}
    findings = sorted((_placed(f, ctx, reads) for f in results.findings), key=_order)
    if any(f.code == "DF913" for f in findings):
        # DF913 says it from the pin, at the pin: the pair check's own "predates DFlash" error (DF012) repeats it
        findings = [f for f in findings if not (f.code == "DF012" and f.severity == "error")]
    if ctx.has_pair:
        report = build_report(ctx.target, ctx.draft, ctx.modules, ctx.weights, results, strict=settings.strict,
                              versions=versions)
        report = replace(report, findings=findings)
    else:
        from dflash_compat.checker.report import judged_engines

        report = Report(target={"source": launch.settings.get("target")},
                        draft={"source": launch.settings.get("draft")}, backends=[backend], findings=findings,
                        summary=summarize(findings, results.counts), strict=settings.strict,
                        rules=list(results.rules), engines=judged_engines(results.rules, [backend], versions))
    from dflash_compat.pipeline.launch_fix import corrected

    return LaunchReport(launch, LaunchVersion.of(versions.get(launch.engine), launch.engine), report,
                        fixed=corrected(launch, findings, ctx.draft))


def _order(f: Finding) -> tuple:
    """Pair findings first, then the launch rules' (as the report listed them), each group sorted by the runner."""
    return (f.code >= "DF9",)


def _launch_rules(settings: LaunchSettings) -> list[Any]:
    from dflash_compat.rules import ALL_RULES

    return select_rules(ALL_RULES, settings.select, settings.ignore)


def check_text(file: str, text: str, settings: LaunchSettings) -> FileResult:
    """Every launch in one file's text (`file` is how findings name it). LaunchFileError for a file that
    cannot be read."""
    kind, cands = candidates(file, text, Deadline(settings.read_seconds))
    pins = pins_in(text)
    rules = _launch_rules(settings)
    launches = [launch for c in cands if (launch := find_launch(c)) is not None]
    reports = [_judge(launch, launches[:i], pins, settings, rules) for i, launch in enumerate(launches)]
    return FileResult(file, kind, reports)


def check_file(path: str, settings: LaunchSettings, stdin: Any = None) -> FileResult:
    """One file (`-`: standard input, named <stdin>) as a result: a file that cannot be read is a result
    with its error, never an exception, so that the other files of a run are judged."""
    name = STDIN if path == "-" else path
    try:
        text = _read_stdin(stdin) if path == "-" else _read(path)
        return check_text(name, text, settings)
    except LaunchFileError as e:
        return FileResult(name, "unread", [], error=e.reason, error_line=e.line)
    except InputError as e:
        prefix = f"{name}: "
        message = str(e)
        return FileResult(name, "unread", [], error=message[len(prefix):] if message.startswith(prefix) else message)


def check_files(paths: Sequence[str], settings: LaunchSettings, stdin: Any = None) -> list[FileResult]:
    return [check_file(path, settings, stdin) for path in paths]


def _read(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file")
    if p.stat().st_size > MAX_BYTES:
        raise InputError(f"{path}: larger than 4 MiB; not a launch file")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror})") from None


def _read_stdin(stream: Any = None) -> str:
    """Standard input, read to its end but never more than the 4 MiB bound (`helm template ... | dflash-check
    launch -`)."""
    import sys

    stream = stream if stream is not None else sys.stdin
    raw = getattr(stream, "buffer", stream).read(MAX_BYTES + 1)
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    if len(raw) > MAX_BYTES:
        raise InputError(f"{STDIN}: larger than 4 MiB; not a launch file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{STDIN}: not UTF-8 text (byte {e.start})") from None
