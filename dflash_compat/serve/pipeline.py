"""The one place the serving commands call the check pipeline: options in, a Report for one engine out.

`serve` derives a launch command, parses its argv back into checker options (`launch.options_from_argv`)
and hands them to `check_for_engine`, so the rules judge exactly what is printed. Checker internals
(CheckOptions, CheckRequest, run_check) are imported here and nowhere else in
`dflash_compat.serve`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

from dflash_compat.exceptions import InputError

__all__ = ["PairRef", "make_options", "option_supported", "draft_facts", "check_for_engine", "blocking_findings"]


@dataclass(frozen=True)
class PairRef:
    """Which target and draft to check, and how to reach them."""

    target: str
    draft: str
    revision: Optional[str] = None
    draft_revision: Optional[str] = None
    token: Optional[str] = None
    framework: str = "auto"
    deep: bool = True
    trust_remote_code: bool = False


def _option_fields() -> set[str]:
    from dflash_compat.deployment.options import CheckOptions

    return {f.name for f in dataclasses.fields(CheckOptions)}


def option_supported(name: str) -> bool:
    """Whether the installed checker has this CheckOptions field (every launch option serve prints must
    have one, so that the rules judge it)."""
    return name in _option_fields()


def make_options(values: dict[str, Any], pair: PairRef, flags: Optional[dict[str, str]] = None) -> Any:
    """CheckOptions from launch options (`flags`: option name -> the flag the user typed, for messages).
    A set option the checker has no field for cannot be judged by its rules: that is an input error,
    never a silently unchecked command."""
    from dflash_compat.deployment.options import CheckOptions

    known = _option_fields()
    unknown = sorted(k for k, v in values.items() if v is not None and v is not False and k not in known)
    if unknown:
        names = ", ".join((flags or {}).get(k, k) for k in unknown)
        raise InputError(f"{names}: this version's rules cannot check it yet, so no command is printed; "
                         "leave it out or upgrade dflash-compat")
    chosen = {k: v for k, v in values.items() if k in known and v is not None}
    chosen.update(deep=pair.deep, trust_remote_code=pair.trust_remote_code, token=pair.token)
    return CheckOptions(**chosen)


def draft_facts(pair: PairRef) -> dict[str, Any]:
    """The draft's config facts a launch command is derived from (config.json only, no weights)."""
    from dflash_compat.pipeline.check import load_draft
    from dflash_compat.resolve.refs import resolve

    spec = load_draft(resolve(pair.draft, "draft", revision=pair.draft_revision, token=pair.token))
    return spec.model_dump(mode="json", exclude={"sources"})


def check_for_engine(pair: PairRef, engine: str, options: Any, versions: Any = None) -> Any:
    """Run every rule for one engine (plus the common ones) on the pair with these options -> Report.
    `versions`: the engine releases to judge at (engine_versions.Versions; None: installed, else newest)."""
    from dflash_compat.pipeline.check import CheckRequest, run_check

    # options.deep (from make_options) decides whether the module tree and weight headers are read.
    # `serve --engine transformers` prints the dflash package's CLI (`dflash generate transformers`): the
    # reference runtime, judged by the `dflash` backend's rules.
    backend = {"transformers": "dflash"}.get(engine, engine)
    req = CheckRequest(
        target=pair.target, draft=pair.draft, backends=[backend], options=options, revision=pair.revision,
        draft_revision=pair.draft_revision, token=pair.token, framework=pair.framework, versions=versions,
    )
    return run_check(req)


def blocking_findings(report: Any) -> list[Any]:
    """The findings that make the engine's verdict fail (errors, its own or common)."""
    return [f for f in report.findings if f.severity == "error"]
