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

import math
from pathlib import Path
from typing import Any, Optional, Sequence

from ..emitters._safe import dumps
from ..exceptions import InputError

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
    from ..safe_write import check_output

    check_output(path, force=force, option="--profile-out", is_ours=looks_like_profile, protected=protected)


def write_profile(path: str, profile: dict[str, Any], force: bool = False, protected: Sequence[Path] = ()) -> None:
    """Write the profile atomically: never through a symlink, over a file that is not a profile (without
    `force`) or into a `protected` (model) folder."""
    from ..safe_write import write_output

    write_output(path, dumps(profile), force=force, option="--profile-out", is_ours=looks_like_profile,
                 protected=protected)


def read_profile(path: str) -> dict[str, Any]:
    """Read and validate a profile (a bounded read of a regular file); anything malformed is one InputError line."""
    from ..safe_read import load_json_file

    data = load_json_file(path, what=f"--profile {path}", limit=MAX_PROFILE_BYTES)
    if not isinstance(data, dict) or data.get("kind") != PROFILE_KIND:
        raise InputError(f"--profile {path}: not an acceptance profile (write one with smoke/probe --profile-out)")
    per = data.get("per_position_acceptance")
    if not isinstance(per, list) or not all(_is_prob(p) for p in per):
        raise InputError(f"--profile {path}: per_position_acceptance must be a list of numbers in [0, 1]")
    cost = data.get("cost")
    if cost is not None and not _valid_cost(cost):
        raise InputError(f"--profile {path}: cost must hold non-negative numbers draft and verify_per_token")
    return data


def _is_prob(p: Any) -> bool:
    return isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p) and 0.0 <= p <= 1.0


def _valid_cost(cost: Any) -> bool:
    return isinstance(cost, dict) and all(
        isinstance(cost.get(k), (int, float)) and not isinstance(cost.get(k), bool) and math.isfinite(cost[k])
        and cost[k] >= 0 for k in ("draft", "verify_per_token"))


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
    from ..runtime.stats import per_position_acceptance

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
