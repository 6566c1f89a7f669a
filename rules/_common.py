"""Small helpers shared by the config-level rules (not rules themselves: no RULE here)."""

from __future__ import annotations

from typing import Any

from dflash_compat.checker.engine import CheckContext
from dflash_compat.checker.findings import Location

__all__ = ["is_int", "model_type_loc", "disagreeing_locations", "version_key", "text_int",
           "NATIVE_RECURRENT_ROLLBACK"]

# transformers' native DFlash rolls a recurrent target back from this release on: 5.24.0 refuses stateful
# models in assisted generation (generation/utils.py:1885-1890); 5.25.0 drops that check and restores
# recurrent states from a per-step history (cache_utils.py:1162-1207, generation/utils.py:4002).
NATIVE_RECURRENT_ROLLBACK = "5.25.0"


def version_key(version: str) -> tuple[int, ...]:
    """(5, 25, 0) for "5.25.0" / "5.25.0.dev0"; the leading numeric parts only."""
    out = []
    for part in version.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit()) if part[:1].isdigit() else ""
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def is_int(value: Any) -> bool:
    """A JSON integer (bool is an int subclass in Python, but not a layer id or a token id)."""
    return isinstance(value, int) and not isinstance(value, bool)


def text_int(ctx: CheckContext, key: str) -> tuple[str, Any]:
    """(the dotted key, its integer value or None) of a key of the target's text config as config.json has it
    (`text_config.KEY` for a wrapper), for keys the specs do not model."""
    from dflash_compat.specs._reader import get_dotted

    t = ctx.target
    dotted = f"{t.text_prefix}.{key}" if t.text_prefix else key
    value = get_dotted(t.raw, dotted)
    return dotted, value if is_int(value) else None


def model_type_loc(ctx: CheckContext) -> Location:
    """The key that holds the model type a message names: `text_config.model_type` for wrappers."""
    if ctx.target.text_model_type:
        return ctx.tloc("text_model_type")
    return ctx.tloc("model_type", "model_type")


def disagreeing_locations(ctx: CheckContext, field: str, locations: dict[str, Any], nested_key: str,
                          what: str, readers: str, others: str):
    """DF114 / DF116: one draft setting written under two keys with different values."""
    from dflash_compat.checker.engine import Violation
    from dflash_compat.quoting import quote

    if len({repr(v) for v in locations.values()}) < 2:
        return
    listed = ", ".join(f"{k}={quote(v)}" for k, v in locations.items())
    yield Violation(
        f"{what} disagree: {listed}; {readers} use {quote(locations.get(nested_key, '?'))}, {others} the other one",
        [ctx.dloc(field, k) for k in locations],
    )
