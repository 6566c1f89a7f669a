"""Acceptance profiles (written by `smoke` and `probe`) and the speed-up model `recommend` uses.

Model (docs/serving.md, "Choosing K"): with p_k the probability that draft position k is accepted
(given that it was drafted), one speculative step with K draft tokens commits on average

    E(K) = 1 + p_1 + ... + p_K          tokens (the target's own bonus token, plus accepted drafts)

and costs  c(K) = draft + verify(K + 1),  verify(n) = v0 + v1 * n.  A plain decoding step costs
verify(1) and commits one token, so the modelled speed-up is  S(K) = E(K) * verify(1) / c(K),  and
S(0) = 1. Costs are stored relative to one plain target step (verify(1) = 1):
`draft` = draft / verify(1) and `verify_per_token` = v1 / verify(1). Pure standard library.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional, Sequence

from dflash_compat.emitters._safe import dumps
from dflash_compat.exceptions import InputError

__all__ = ["PROFILE_KIND", "make_profile", "write_profile", "read_profile", "expected_tokens", "step_cost",
           "modelled_speedup", "speedup_table", "recommend_k", "fit_cost", "DEFAULT_COST", "profile_from_smoke",
           "profile_from_probe"]

PROFILE_KIND = "dflash-acceptance-profile"
MAX_PROFILE_BYTES = 16 * 1024 * 1024  # a profile is one number per draft position: a few KB
SCHEMA_VERSION = 1
# Assumed when a profile carries no measured cost and none is given: a draft pass costs a tenth of a
# target step and verifying more tokens in one pass is free (a memory-bound GPU decode). Stated as an
# assumption in every output that uses it.
DEFAULT_COST = {"draft": 0.1, "verify_per_token": 0.0}


def make_profile(*, source: str, engine: str, block_size: int, per_position: Sequence[float], steps: int,
                 mean_acceptance: float, convention: str, cost: Optional[dict[str, float]] = None,
                 measured: Optional[dict[str, float]] = None) -> dict[str, Any]:
    """The profile document (JSON-ready)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": PROFILE_KIND,
        "source": source,
        "engine": engine,
        "block_size": int(block_size),
        "steps": int(steps),
        "per_position_acceptance": [float(p) for p in per_position],
        "mean_acceptance": float(mean_acceptance),
        "convention": convention,
        "cost": dict(cost) if cost else None,
        "measured": dict(measured) if measured else None,
    }


def looks_like_profile(head: bytes) -> bool:
    """Whether a file's first bytes are a profile written here (so --profile-out may replace it without --force)."""
    return head.lstrip().startswith(b"{") and f'"kind": "{PROFILE_KIND}"'.encode() in head


def check_profile_out(path: str, force: bool = False, protected: Sequence[Path] = ()) -> None:
    """Refuse a --profile-out path before the run that would fill it (safe_write's rules)."""
    from dflash_compat.files.safe_write import check_output

    check_output(path, force=force, option="--profile-out", is_ours=looks_like_profile, protected=protected)


def write_profile(path: str, profile: dict[str, Any], force: bool = False, protected: Sequence[Path] = ()) -> None:
    """Write the profile atomically: never through a symlink, over a file that is not a profile (without
    `force`) or into a `protected` (model) folder."""
    from dflash_compat.files.safe_write import write_output

    write_output(path, dumps(profile), force=force, option="--profile-out", is_ours=looks_like_profile,
                 protected=protected)


def _profile_model():
    """The typed profile (pydantic, built on first use): strict types, finite numbers, bounded sizes, so
    the renderer and the speed-up model never meet a string, a null or NaN where they expect a number."""
    from typing import Literal

    from pydantic import BaseModel, ConfigDict, Field

    strict = ConfigDict(strict=True, allow_inf_nan=False, extra="ignore")
    unit = Field(ge=0.0, le=1.0)

    class Cost(BaseModel):
        model_config = strict
        draft: float = Field(ge=0.0, le=1e6)
        verify_per_token: float = Field(ge=0.0, le=1e6)

    class Measured(BaseModel):
        model_config = strict
        block_size: int = Field(ge=1, le=MAX_BLOCK)
        speedup: float = Field(ge=0.0, le=1e6)

    class Profile(BaseModel):
        model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="allow")
        kind: Literal["dflash-acceptance-profile"]
        source: str = Field(max_length=200)
        engine: str = Field(max_length=200)
        block_size: int = Field(ge=1, le=MAX_BLOCK)
        steps: int = Field(ge=0, le=2**53)
        per_position_acceptance: list[Annotated[float, unit]] = Field(max_length=MAX_BLOCK)
        mean_acceptance: float = Field(ge=0.0, le=MAX_BLOCK + 1)
        convention: str = Field("", max_length=2000)
        cost: Optional[Cost] = None
        measured: Optional[Measured] = None

    return Profile


MAX_BLOCK = 4096  # draft positions in a profile; real blocks are 4-16


def read_profile(path: str) -> dict[str, Any]:
    """Read a profile (a bounded read of a regular file) into the typed model; the first validation error
    is one InputError line naming the field (`--profile P: measured.block_size: ...`)."""
    from pydantic import ValidationError

    from dflash_compat.files.safe_read import load_json_file

    what = f"--profile {path}"
    data = load_json_file(path, what=what, limit=MAX_PROFILE_BYTES)
    if not isinstance(data, dict) or data.get("kind") != PROFILE_KIND:
        raise InputError(f"{what}: not an acceptance profile (write one with smoke/probe --profile-out)")
    try:
        profile = _profile_model().model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or "(the document)"
        msg = err.get("msg", "is invalid").rstrip(".")
        if msg.startswith("Input should be"):
            msg = "should be" + msg[len("Input should be"):]
        if err.get("type") == "missing":
            raise InputError(f"{what}: `{field}` is required") from None
        from dflash_compat.quoting import quote

        raise InputError(f"{what}: `{field}` {msg} (got {quote(err.get('input'), chars=40)})") from None
    return profile.model_dump()


def expected_tokens(per_position: Sequence[float], k: int) -> float:
    """E(K): tokens one step commits on average with K draft tokens (bonus included)."""
    return 1.0 + sum(per_position[:k])


def step_cost(cost: dict[str, float], k: int) -> float:
    """c(K) relative to a plain target step: 1 for K = 0, else draft + verify(K + 1)."""
    if k == 0:
        return 1.0
    return cost["draft"] + 1.0 + cost["verify_per_token"] * k


def modelled_speedup(per_position: Sequence[float], cost: dict[str, float], k: int) -> float:
    return expected_tokens(per_position, k) / step_cost(cost, k)


def speedup_table(per_position: Sequence[float], cost: dict[str, float]) -> list[dict[str, float]]:
    """One row per K = 0 .. len(per_position): E(K), c(K), S(K)."""
    return [{"k": k, "expected_tokens": expected_tokens(per_position, k), "step_cost": step_cost(cost, k),
             "speedup": modelled_speedup(per_position, cost, k)} for k in range(len(per_position) + 1)]


def recommend_k(per_position: Sequence[float], cost: dict[str, float]) -> int:
    """The K with the highest modelled speed-up (the smallest such K on ties: fewer wasted drafts)."""
    table = speedup_table(per_position, cost)
    best = max(row["speedup"] for row in table)
    return next(int(row["k"]) for row in table if row["speedup"] >= best - 1e-12)


def fit_cost(plain_step_s: float, long_step_s: float, long_block: int, short_step_s: Optional[float],
             short_block: Optional[int]) -> dict[str, float]:
    """Fit draft + verify(n) = draft + v0 + v1 n to three timings: a plain target step (= verify(1)),
    speculative steps at block sizes `long_block` and `short_block` (seconds per step). With one
    speculative timing only, verifying more tokens is taken as free (v1 = 0). Relative to verify(1)."""
    if plain_step_s <= 0:
        raise InputError("the plain decoding step took no measurable time; use more tokens")
    v1 = 0.0
    if short_step_s is not None and short_block is not None and long_block != short_block:
        v1 = max((long_step_s - short_step_s) / (long_block - short_block), 0.0)
    v0 = plain_step_s - v1
    draft = max(long_step_s - v0 - v1 * long_block, 0.0)
    return {"draft": draft / plain_step_s, "verify_per_token": v1 / plain_step_s,
            "plain_step_s": plain_step_s}


REFERENCE_CONVENTION = ("tau = tokens committed per target verify step, bonus included "
                        "(reference runtime: dflash_compat/runtime/stats.py)")


def _per_step(results: Sequence[Any]) -> tuple[float, int]:
    """(decode seconds, decode steps) summed over GenerationResults."""
    return sum(r.stats.decode_s for r in results), sum(len(r.stats.acceptance_lengths) for r in results)


def profile_from_smoke(run: Any, speedup: float) -> dict[str, Any]:
    """The profile of a `smoke` run (commands.smoke.SmokeRun): per-position acceptance over every
    step, and the cost model fitted to its timings (plain greedy steps, speculative steps at the run's
    block size and, when measured, at a short block size)."""
    from dflash_compat.runtime.stats import per_position_acceptance

    accepted = [a for p in run.prompts for a in p.spec.stats.accepted]
    drafted = [d for p in run.prompts for d in p.spec.stats.drafted]
    lengths = [n for p in run.prompts for n in p.spec.stats.acceptance_lengths]
    base_s, base_steps = _per_step([p.baseline for p in run.prompts])
    spec_s, spec_steps = _per_step([p.spec for p in run.prompts])
    shorts = [p.short for p in run.prompts if getattr(p, "short", None) is not None]
    cost = None
    if base_steps and spec_steps and base_s > 0:
        short_s, short_steps = _per_step(shorts)
        short_block = shorts[0].stats.block_size if shorts else None
        cost = fit_cost(base_s / base_steps, spec_s / spec_steps, run.block_size,
                        short_s / short_steps if short_steps else None, short_block)
    return make_profile(
        source="smoke", engine=run.backend, block_size=run.block_size,
        per_position=per_position_acceptance(accepted, drafted, run.block_size), steps=len(lengths),
        mean_acceptance=sum(lengths) / len(lengths) if lengths else 0.0, convention=REFERENCE_CONVENTION,
        cost=cost, measured={"block_size": run.block_size, "speedup": float(speedup)},
    )


def profile_from_probe(payload: dict[str, Any]) -> dict[str, Any]:
    """The profile of a `probe` run: the engine's own per-position acceptance (no cost measured)."""
    s = payload["summary"]
    per = s.get("per_position_acceptance") or []
    block = payload["server"].get("speculative", {}).get("speculative_num_draft_tokens") or len(per) + 1
    return make_profile(source="probe", engine=payload["server"]["engine"], block_size=int(block),
                        per_position=per, steps=s.get("steps", 0), mean_acceptance=s.get("mean_acceptance", 0.0),
                        convention=s.get("convention", ""))
