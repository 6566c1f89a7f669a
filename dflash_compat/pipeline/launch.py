"""`dflash-check launch`: every engine launch in the given files, each judged at its engine version by the
launch rules (DF901-DF999) and, where the pair can be read, by the full check for that engine."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from dflash_compat.checker.engine import COMMON, Rule, select_rules, severity_override
from dflash_compat.checker.findings import Finding, RuleRun, backend_counts
from dflash_compat.checker.launch_context import LaunchContext
from dflash_compat.checker.report import Report, summarize
from dflash_compat.deployment.options import CheckOptions
from dflash_compat.engines.flags import flag_facts
from dflash_compat.exceptions import DFlashCompatError, InputError
from dflash_compat.launch.parse import Launch, find_launch
from dflash_compat.launch.sources import candidates, pins_in
from dflash_compat.launch.versions import LaunchVersion, pair_versions, select_version

__all__ = ["LaunchSettings", "LaunchReport", "FileResult", "check_files", "check_text", "launch_options"]

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


def launch_options(launch: Launch) -> dict[str, Any]:
    """The launch's settings as CheckOptions fields: what `check --tp ... --num-speculative-tokens ...`
    would have been given (rules DF303, DF304, DF307, DF401, DF405, DF410-DF413 read them)."""
    s = launch.settings

    def num(name: str) -> Optional[int]:
        v = s.get(name)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else None

    out: dict[str, Any] = {"tp": num("tp") or 1, "pp_size": num("pp") or 1}
    if launch.engine == "vllm":
        out.update(num_speculative_tokens=num("num_speculative_tokens"), draft_tp=num("draft_tp"),
                   max_num_seqs=num("max_num_seqs"), max_num_batched_tokens=num("max_num_batched_tokens"))
    elif launch.engine == "sglang":
        attn_dp = num("attn_dp_size")
        if attn_dp is None and s.get("enable_dp_attention") and num("dp"):
            attn_dp = num("dp")  # --dp-size N --enable-dp-attention: the old spelling of --attn-dp-size N
        out.update(sglang_num_draft_tokens=num("num_draft_tokens"), sglang_dflash_block_size=num("dflash_block_size"),
                   sglang_draft_window_size=num("draft_window_size"), sglang_attn_dp_size=attn_dp,
                   sglang_enable_dp_lm_head=bool(s.get("enable_dp_lm_head")), max_num_seqs=num("max_num_seqs"),
                   sglang_quantization=s.get("quantization") if isinstance(s.get("quantization"), str) else None,
                   sglang_draft_quantization=s.get("draft_quantization")
                   if isinstance(s.get("draft_quantization"), str) else None)
    elif launch.engine == "llama.cpp":
        out.update(llamacpp_draft_n_max=num("n_max"))
    return out


# pair rules that read launch options -> the launch settings (in order) where their findings point
_OPTION_RULES = {
    "DF303": ("num_speculative_tokens",), "DF312": ("method", "draft"),
    "DF304": ("max_num_batched_tokens", "max_num_seqs", "num_speculative_tokens"),
    "DF307": ("draft_tp", "tp"), "DF401": ("num_draft_tokens", "dflash_block_size"),
    "DF405": ("draft_quantization", "quantization"),
    "DF410": ("attn_dp_size", "enable_dp_attention", "dp"), "DF411": ("pp",),
    "DF412": ("dflash_block_size", "num_draft_tokens"), "DF815": ("n_max",),
    "DF413": ("draft_window_size", "num_draft_tokens", "dflash_block_size"),
}


def _placed(f: Finding, ctx: LaunchContext) -> Finding:
    """A pair finding with the launch line it concerns first: the flag an option rule read, else the draft
    (where the launch names the model whose config the finding is about), else the launch itself."""
    settings = _OPTION_RULES.get(f.code, ())
    at = next((s for s in settings if s in ctx.launch.where), None)
    if at is None and "draft" in ctx.launch.where and any(loc.artifact == "draft" for loc in f.locations):
        at = "draft"
    elif at is None and "target" in ctx.launch.where and any(loc.artifact == "target" for loc in f.locations):
        at = "target"
    return replace(f, locations=[ctx.at(at), *f.locations])


def _launch_rules(settings: LaunchSettings) -> list[Rule]:
    from dflash_compat.rules import ALL_RULES

    return [r for r in select_rules(ALL_RULES, settings.select, settings.ignore) if "launch" in r.needs]


def _run_launch_rules(ctx: LaunchContext, rules: Sequence[Rule], backend: str,
                      severity: Mapping[str, str]) -> tuple[list[RuleRun], list[Finding]]:
    runs, found = [], []
    for rule in rules:
        forced = severity_override(rule.code, severity)
        if forced == "ignore":
            continue
        base = dict(code=rule.code, name=rule.name, severity=forced or rule.severity, backends=tuple(rule.backends),
                    docs=rule.docs)
        target = COMMON if COMMON in rule.backends else (backend if backend in rule.backends else None)
        if target is None:
            runs.append(RuleRun(**base, status="not-applicable", reason=f"not a rule for {backend}"))
            continue
        runs.append(RuleRun(**base, status="ran"))
        for v in rule.check(ctx):
            found.append(Finding(code=rule.code, name=rule.name, severity=forced or v.severity or rule.severity,
                                 backend=target, message=v.message, fix=v.fix or rule.fix,
                                 locations=list(v.locations)))
    return runs, found


def _pair(launch: Launch, settings: LaunchSettings, version: LaunchVersion
          ) -> tuple[Optional[Report], Any, Any, Optional[str]]:
    """(the pair's report, target spec, draft spec, why it was not checked)."""
    if not settings.pair:
        return None, None, None, "--no-pair"
    backend = BACKEND[launch.engine]
    method = launch.settings.get("method") if launch.engine == "vllm" else launch.settings.get("algorithm")
    if launch.engine in ("vllm", "sglang") and isinstance(method, str) and method.lower() not in ("dflash", "dspark"):
        return None, None, None, f"the speculative method is {method!r}, not DFlash"
    for ref in ("target", "draft"):
        if ref in launch.unresolved:
            names = ", ".join("$" + n if not n.startswith(("$", "`")) else n for n in launch.unresolved[ref][1])
            return None, None, None, f"the {ref} comes from {names}"
        if not isinstance(launch.settings.get(ref), str) or not launch.settings.get(ref):
            return None, None, None, f"the launch names no {ref}"
    from dflash_compat.pipeline.check import CheckRequest, load_draft, load_target, run_check
    from dflash_compat.resolve.refs import resolve

    options = CheckOptions(**launch_options(launch), deep=settings.deep, token=settings.token)
    req = CheckRequest(target=launch.settings["target"], draft=launch.settings["draft"], backends=[backend],
                       select=[p for p in settings.select if not p.upper().startswith("DF9")] or (),
                       ignore=settings.ignore, options=options,
                       revision=_str(launch.settings.get("revision")),
                       draft_revision=_str(launch.settings.get("draft_revision")), token=settings.token,
                       strict=settings.strict, severity=settings.severity)
    versions = pair_versions(version, settings.engine_versions, settings.config_versions)
    if versions is not None and hasattr(req, "versions"):
        req = replace(req, versions=versions)
    try:
        report = run_check(req)
        target = load_target(resolve(req.target, "target", revision=req.revision, token=req.token))
        draft = load_draft(resolve(req.draft, "draft", revision=req.draft_revision, token=req.token))
    except DFlashCompatError as e:
        return None, None, None, " ".join(str(e).split())
    return report, target, draft, None


def _engine_entry(engine: str, version: str, origin: str) -> dict[str, str]:
    """The report's `engines` entry (engine_versions.Selected.as_json's shape) of the release a launch pins."""
    from dflash_compat.engines.registry import select_versions
    from dflash_compat.exceptions import DFlashCompatError

    try:
        sel = select_versions(launch={engine: version}, engines=[engine], installed=False)[engine]
        return {**sel.as_json(), "origin": origin}
    except (DFlashCompatError, KeyError, ValueError):  # a release the registry cannot order: as pinned
        return {"version": version, "requested": version, "origin": origin, "status": "unknown"}


def _str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def _judge(launch: Launch, earlier: Sequence[Launch], pins: Mapping[str, tuple[str, int]],
           settings: LaunchSettings, rules: Sequence[Rule]) -> LaunchReport:
    version = select_version(launch, pins, settings.engine_versions, settings.config_versions)
    facts = flag_facts(launch.engine, version.version) if version.version else None
    pair, target, draft, skipped = _pair(launch, settings, version)
    ctx = LaunchContext(launch=launch, version=version, flags=facts, draft=draft, target=target,
                        earlier=tuple(earlier), pair_skipped=skipped)
    backend = BACKEND[launch.engine]
    runs, found = _run_launch_rules(ctx, rules, backend, settings.severity)
    findings = ([_placed(f, ctx) for f in pair.findings] if pair else []) + found
    all_runs = (list(pair.rules) if pair else []) + runs
    counts = {backend: backend_counts(findings, all_runs, backend)}
    engines = dict(pair.engines) if pair else {}
    if version.version and launch.engine not in engines:
        engines[launch.engine] = _engine_entry(launch.engine, version.version, version.origin)
    report = Report(
        target=pair.target if pair else {"source": launch.settings.get("target")},
        draft=pair.draft if pair else {"source": launch.settings.get("draft")},
        backends=[backend], findings=findings, summary=summarize(findings, counts), strict=settings.strict,
        rules=all_runs, engines=engines,
    )
    from dflash_compat.pipeline.launch_fix import corrected

    return LaunchReport(launch, version, report, fixed=corrected(launch, findings, draft))


def check_text(file: str, text: str, settings: LaunchSettings) -> FileResult:
    """Every launch in one file's text (`file` is how findings name it)."""
    kind, cands = candidates(file, text)
    pins = pins_in(text)
    rules = _launch_rules(settings)
    launches = [launch for c in cands if (launch := find_launch(c)) is not None]
    reports = [_judge(launch, launches[:i], pins, settings, rules) for i, launch in enumerate(launches)]
    return FileResult(file, kind, reports)


def check_files(paths: Sequence[str], settings: LaunchSettings) -> list[FileResult]:
    return [check_text(path, _read(path), settings) for path in paths]


def _read(path: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file")
    if p.stat().st_size > 4 * 1024 * 1024:
        raise InputError(f"{path}: larger than 4 MiB; not a launch file")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise InputError(f"{path}: cannot be read ({e.strerror})") from None
