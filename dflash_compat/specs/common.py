"""Types shared by the draft and target specs: sizes, numbers, RoPE, and validation into ConfigError."""

# No `from __future__ import annotations` here: pydantic would compile and evaluate every field's
# annotation string when it builds the models (about 3 ms of every check's start-up).
from typing import Annotated, Any, Optional, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, ValidationError

from dflash_compat.exceptions import ConfigError
from dflash_compat.specs._reader import ConfigReader

__all__ = ["SizeInt", "Number", "RopeInfo", "read_rope", "validate_spec", "new_list"]


def new_list() -> list:
    """A fresh empty list: the `default_factory` of the specs' list fields. A plain function, not the
    builtin `list`: pydantic reads each factory's signature when it builds a model, and the builtin's
    text signature makes `inspect` compile tokenize's patterns (~10 ms of every start-up)."""
    return []

# A positive size; the upper bound only rejects absurd values (no real model has 10M of anything
# per layer), so that a typo gets one clear error instead of an overflow later.
SizeInt = Annotated[StrictInt, Field(gt=0, le=10_000_000)]
Number = Union[StrictInt, StrictFloat]

_ROPE_FIELDS = {
    "theta": ("rope_theta", "rope_parameters.rope_theta", "rope_parameters.full_attention.rope_theta",
              "rotary_emb_base"),
    "rope_type": ("rope_scaling.rope_type", "rope_scaling.type", "rope_parameters.rope_type",
                  "rope_parameters.full_attention.rope_type"),
    "scaling": ("rope_scaling",),
    "factor": ("rope_scaling.factor", "rope_parameters.factor", "rope_parameters.full_attention.factor"),
    "mrope_section": ("rope_scaling.mrope_section", "rope_parameters.mrope_section", "mrope_section"),
    "partial_rotary_factor": ("partial_rotary_factor", "rope_parameters.partial_rotary_factor", "rotary_pct"),
    "interleaved": ("rope_interleave", "rope_interleaved", "rotary_interleaved"),
}


class RopeInfo(BaseModel):
    """Rotary position embedding settings, from whichever of the known key layouts is present."""

    model_config = ConfigDict(extra="forbid")

    theta: Optional[Number] = Field(None, description="RoPE base (rope_theta).")
    rope_type: Optional[str] = Field(None, description="'default', 'linear', 'yarn', 'llama3', ...")
    scaling: Optional[dict[str, Any]] = None
    factor: Optional[Number] = Field(None, description="Scaling factor of linear / dynamic / yarn / llama3 RoPE.")
    mrope_section: Optional[list[Any]] = None
    partial_rotary_factor: Optional[Number] = None
    interleaved: Optional[StrictBool] = None


def read_rope(r: ConfigReader) -> dict[str, Any]:
    """Read RoPE settings; sources are recorded as `rope.<field>`."""
    out: dict[str, Any] = {}
    for field, keys in _ROPE_FIELDS.items():
        name = f"rope.{field}"
        value = r.take(name, *keys)
        r.values.pop(name, None)
        if value is not None:
            out[field] = value
    return out


M = TypeVar("M", bound=BaseModel)


def validate_spec(cls: type[M], data: dict[str, Any], sources: dict[str, str], where: str) -> M:
    """`cls.model_validate(data)`, turning the first validation error into a one-line ConfigError
    that names the config key as written in the file."""
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err.get("loc", ())]
        field = loc[0] if loc else "?"
        rest = loc[1:]
        if field in ("rope", "xpress", "lilicorr", "domino", "speculators") and rest:  # nested groups
            field, rest = f"{field}.{rest[0]}", rest[1:]
        # keep list indices (layer_types.3); drop pydantic's union / constraint tags (int, constrained-int)
        rest = [p for p in rest if p.isdigit()]
        key = ".".join([sources.get(field, field), *rest])
        if err.get("type") == "missing":
            raise ConfigError(f"{where}: `{key}` is required") from None
        tags = {str(e["loc"][-1]) for e in exc.errors() if e.get("loc") and str(e["loc"][0]) == loc[0]}
        if {"int", "float"} <= tags:  # a Number field: int or float, and it was neither
            msg = "should be a number"
        else:
            msg = err.get("msg", "is invalid").rstrip(".")
            if msg.startswith("Input should be"):
                msg = "should be" + msg[len("Input should be"):]
        got = repr(err.get("input"))
        if len(got) > 80:
            got = got[:77] + "..."
        raise ConfigError(f"{where}: `{key}` {msg} (got {got})") from None

