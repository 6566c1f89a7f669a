"""Errors a user can cause; the CLI turns each into one line on stderr and an exit code."""

from __future__ import annotations

__all__ = [
    "EXIT_OK",
    "EXIT_FAIL",
    "EXIT_INPUT",
    "EXIT_INTERNAL",
    "DFlashCompatError",
    "InputError",
    "ResolutionError",
    "ConfigError",
    "NotADraftError",
    "WeightsError",
    "RemoteCodeError",
    "RuntimeUnsupportedError",
    "MissingDependencyError",
    "ConversionError",
    "error_line",
    "one_line",
    "ResourceError",
]

# Exit codes of `dflash-check` (the README's and `--help`'s table): 0 compatible / passed,
# 1 incompatible / failed (only ever a verdict on the pair), 2 bad input or usage (the default for
# every user error below), 3 an internal error: dflash-check itself broke (errors.internal_error).
EXIT_OK = 0
EXIT_FAIL = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3


class DFlashCompatError(Exception):
    """Base class: a problem the user can fix, with a message that says how."""

    exit_code = EXIT_INPUT


class InputError(DFlashCompatError):
    """Bad command-line input (a malformed option value, a missing file)."""


class ResolutionError(DFlashCompatError):
    """A TARGET or DRAFT could not be found locally or on the Hub."""


class ConfigError(DFlashCompatError):
    """A config.json is missing, not JSON, or holds values of the wrong type or range."""


class NotADraftError(ConfigError):
    """The DRAFT's config describes no DFlash draft in any known format."""


class WeightsError(DFlashCompatError):
    """A safetensors file is truncated, corrupt or unreadable."""


class RemoteCodeError(DFlashCompatError):
    """The model needs its repository's own Python code, and --trust-remote-code was not given."""


class RuntimeUnsupportedError(DFlashCompatError):
    """The runtime cannot run this pairing correctly (e.g. a cache that cannot be rolled back)."""


class MissingDependencyError(DFlashCompatError):
    """An optional extra (torch, mlx) is needed for this command and is not installed."""


class ConversionError(DFlashCompatError):
    """`dflash-check convert` cannot convert this draft without changing what the engines load."""


def one_line(exc: BaseException, limit: int = 300) -> str:
    """An exception's message for a one-line error: its lines joined, cut at `limit` characters;
    the exception's type name when the message is empty (never an IndexError on an empty message)."""
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit] + " ..."


def error_line(exc: BaseException, limit: int = 300) -> str:
    """`Type: message` of a foreign exception on one line (just `Type` when it has no message)."""
    text = one_line(exc, limit)
    return type(exc).__name__ if text == type(exc).__name__ else f"{type(exc).__name__}: {text}"


class ResourceError(DFlashCompatError):
    """The machine ran out of memory (or another resource) for the sizes asked for."""
