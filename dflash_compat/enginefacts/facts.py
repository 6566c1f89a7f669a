"""One engine section of engine_support.json: facts, each with the file and line it was read from."""

from __future__ import annotations

from typing import Any, Callable, Collection, Generic, Mapping, TypeVar

from dflash_compat.enginefacts.source import LayoutError, Loc

__all__ = ["READER_ERRORS", "Section", "Step", "require"]

T = TypeVar("T")
# What a reader raises when the code it reads is not shaped as it expects: a LayoutError it raised itself,
# or an AST walk meeting a node of another kind. Inside `Section.guard` each makes the facts unknown (with
# the reason) for that release; `refresh` prints them and `refresh --check` fails on them.
READER_ERRORS = (LayoutError, AttributeError, IndexError, KeyError, TypeError, ValueError)


def require(items: Collection[str], what: str, anchor: str = "") -> None:
    """Fail loudly instead of writing an empty or truncated list: the list must not be empty and must
    hold `anchor`, an entry every release has had (a reader that misses it has lost its way)."""
    if not items:
        raise LayoutError(f"{what}: none found; has the engine's layout changed?")
    if anchor and anchor not in items:
        raise LayoutError(f"{what}: {anchor} not found among {len(items)}; has the engine's layout changed?")


def reason(exc: BaseException) -> str:
    """One line saying why a fact is unknown."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, LayoutError) else f"the reader failed ({type(exc).__name__}: {text})"


class Step(Generic[T]):
    """A reader step several facts rest on (vLLM's registry, SGLang's EntryClass list): run once, on first
    use; when it fails, every fact that uses it (inside its own `Section.guard`) is unknown with its reason,
    and the facts that do not use it are still read."""

    def __init__(self, fn: Callable[[], T]):
        self._fn = fn
        self._done = False
        self._value: Any = None
        self._error: str = ""

    def __call__(self) -> T:
        if not self._done:
            self._done = True
            try:
                self._value = self._fn()
            except READER_ERRORS as e:
                self._error = reason(e)
        if self._error:
            raise LayoutError(self._error)
        return self._value


class Section:
    """Facts of one section. Every list element and dict key gets a source under `sources[kind]`;
    locations that back a statement rather than a list entry go to `sources["where"]`."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.sources: dict[str, dict[str, dict[str, Any]]] = {}
        # facts the reader could not find at this version: key -> why (recorded, never written as a value)
        self.unknown: dict[str, str] = {}

    def guard(self, *keys: str) -> "_Guard":
        """`with sec.guard("draft_v1_refused"): ...`: a LayoutError (or another READER_ERRORS) inside records
        the keys as unknown for this version (with the reason) instead of stopping the whole run; the
        section's other facts are still read."""
        return _Guard(self, keys)

    def meta(self, key: str, value: Any) -> None:
        """Descriptive text (`source`, `read`, `interface`): not a fact that needs a location."""
        self.data[key] = value

    def names(self, kind: str, found: Mapping[str, Loc]) -> None:
        """A sorted list of names, each with its location."""
        self.data[kind] = sorted(found)
        self.sources[kind] = {name: found[name].as_json() for name in sorted(found)}

    def mapping(self, kind: str, found: Mapping[str, tuple[Any, Loc]]) -> None:
        """A dict name -> value, each with its location."""
        self.data[kind] = {name: found[name][0] for name in sorted(found)}
        self.sources[kind] = {name: found[name][1].as_json() for name in sorted(found)}

    def where(self, name: str, loc: Loc, value: Any = None) -> None:
        """A located statement; `value` (text) also goes to the section under the same key."""
        if value is not None:
            self.data[name] = value
        self.sources.setdefault("where", {})[name] = loc.as_json()

    def facts_json(self) -> dict[str, Any]:
        out = dict(self.data)
        if self.unknown:
            out["unknown"] = dict(sorted(self.unknown.items()))
        return out

    def sources_json(self) -> dict[str, dict[str, dict[str, Any]]]:
        return {kind: self.sources[kind] for kind in sorted(self.sources)}


class _Guard:
    def __init__(self, sec: Section, keys: tuple[str, ...]):
        self.sec, self.keys = sec, keys

    def __enter__(self) -> "_Guard":
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if exc is None or not isinstance(exc, READER_ERRORS):
            return False
        for key in self.keys:
            self.sec.data.pop(key, None)
            self.sec.sources.pop(key, None)
            self.sec.sources.get("where", {}).pop(key, None)
            self.sec.unknown[key] = reason(exc)
        return True
