"""`RuleContext`: everything a rule sees, pair or launch. The two specs, the deep facts (None: not
gathered, --no-deep), the deployment options, the launch line being judged (launch rules), and
`engine(name)`: one engine at the release selected for this run, with its facts, its launch flags and
its citations (`dflash_compat.engines.store.Release`). Helpers build locations from spec sources and
launch-file positions.

Rules read engine knowledge only through `engine(name)` and draft families through `family(...)`;
they never import a store, a reader or a launch module."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

from dflash_compat.checker.findings import Location
from dflash_compat.deployment.options import CheckOptions
from dflash_compat.engines.registry import Versions, default_versions
from dflash_compat.engines.store import Release, release

if TYPE_CHECKING:  # the fact classes load only where facts were gathered (config-only checks stay fast)
    from dflash_compat.engines.families import FamilySupport
    from dflash_compat.launch.parse import Launch
    from dflash_compat.launch.shellwords import Word
    from dflash_compat.modelfacts import DraftWeights, ModuleFacts, Skipped
    from dflash_compat.specs import DraftSpec, TargetSpec

__all__ = ["FACTS", "FileLocation", "RuleContext"]

# The deep facts a rule can need (`Rule.needs`); a rule whose facts were not gathered is skipped.
FACTS = {
    "modules": "the target's module tree",
    "torch-modules": "the target's transformers module tree",
    "mlx-modules": "the target's mlx-lm module tree",
    "weights": "the draft's weight headers",
    # launch-level rules (DF901-DF999) judge a launch command; only `dflash-check launch` has one
    "launch": "a launch command (`dflash-check launch`)",
}


@dataclass(frozen=True)
class FileLocation(Location):
    """A place in a user's launch file (`dflash-check launch`): `file` is its path as given, `line` and
    `column` 1-based; `key` names the flag or setting written there. (Here, not with Location in
    findings: a config-only check never builds one.)"""

    line: int = 0
    column: int = 0


@dataclass(frozen=True)
class RuleContext:
    """What a rule sees. A pair check fills target and draft; a launch check adds the launch line (and the
    pair when its models could be read: `pair_skipped` says why not)."""

    target: Optional["TargetSpec"] = None
    draft: Optional["DraftSpec"] = None
    options: CheckOptions = field(default_factory=CheckOptions)
    modules: Optional[Union["ModuleFacts", "Skipped"]] = None
    weights: Optional[Union["DraftWeights", "Skipped"]] = None
    # The engine releases this run judges against (engines.registry.select_versions); None: the newest bundled.
    versions: Optional[Versions] = None
    # launch rules: the launch being judged, the launches before it in its file, why its pair was not checked
    launch: Optional["Launch"] = None
    earlier: tuple["Launch", ...] = ()
    pair_skipped: Optional[str] = None
    # what kind of reason (pipeline.launch._pair_refs): option, not-speculative, not-dflash, variable, no-draft,
    # no-target, unreadable; "" when the pair was checked
    pair_skip_kind: str = ""

    # -- engines
    @property
    def engine_versions(self) -> Versions:
        return self.versions if self.versions is not None else default_versions()

    def version(self, engine: str) -> str:
        """The release of `engine` ("vllm", "transformers", ...) whose facts this run judges against."""
        return self.engine_versions.used(engine)

    def engine(self, name: str, version: Optional[str] = None) -> Release:
        """`name` at the release selected for this run (or at `version`, to compare releases): its facts,
        launch flags and citations."""
        return release(name, version or self.version(name))

    def flags(self, engine: str) -> Optional[dict[str, Any]]:
        """The launch flags of `engine` at the release this run asks for (None: none bundled for that
        release; flags are never judged with another release's: a newer release may add flags)."""
        release = self.engine(engine)
        sel = self.engine_versions.get(engine)
        asked = sel.requested if sel is not None else release.version
        for v in release.flag_window:
            if release.key(v) == release.key(asked):
                return self.engine(engine, v).flags
        return None

    def family(self, fmt: str, backend: str) -> Optional["FamilySupport"]:
        """Which engine loads a draft family (format) on a backend, and what it needs (None: not known)."""
        from dflash_compat.engines.families import family_support

        return family_support(fmt, backend)

    def families_loading(self, fmt: str) -> list["FamilySupport"]:
        """The verdicts of the backends whose engine loads a draft family, in backend order."""
        from dflash_compat.engines.families import engines_loading

        return engines_loading(fmt)

    # -- which facts were gathered
    @property
    def has_pair(self) -> bool:
        return self.target is not None and self.draft is not None

    @property
    def module_skip(self) -> Optional["Skipped"]:
        """Why the module tree could not be inspected or read (None: it was, or was not tried)."""
        if self.modules is None:
            return None
        from dflash_compat.modelfacts import Skipped

        return self.modules if isinstance(self.modules, Skipped) else self.modules.skipped

    @property
    def weights_skip(self) -> Optional["Skipped"]:
        """Why the draft's weight headers could not be read (None: they were, or were not tried)."""
        if self.weights is None:
            return None
        from dflash_compat.modelfacts import Skipped

        return self.weights if isinstance(self.weights, Skipped) else None

    def missing(self, fact: str) -> Optional[str]:
        """Why `fact` (a key of FACTS) is not available to the rules; None when it is."""
        if fact not in FACTS:
            raise KeyError(f"unknown fact {fact!r}; expected one of {', '.join(FACTS)}")
        if fact == "launch":
            return None if self.launch is not None else "only `dflash-check launch` reads launch commands"
        if fact == "weights":
            if self.weights is not None and self.weights_skip is None:
                return None
            reason = self.weights_skip.reason if self.weights is not None else "--no-deep"
            return f"the draft's weight headers were not read ({reason})"
        m, skip = self.modules, self.module_skip
        if m is None or skip is not None:
            return f"the target's modules were not inspected ({skip.reason if skip else '--no-deep'})"
        wanted = {"torch-modules": "torch", "mlx-modules": "mlx"}.get(fact)
        if wanted and m.framework != wanted:
            names = {"torch": "transformers", "mlx": "mlx-lm"}
            return f"the target's modules were inspected with {names[m.framework]}, not {names[wanted]}"
        return None

    def has(self, fact: str) -> bool:
        """Whether a deep fact was gathered: "modules" (target tree), "weights" (draft headers), ..."""
        return self.missing(fact) is None

    @property
    def tree(self) -> "ModuleFacts":
        """The module facts (built, maybe partly: groups may be None); a rule that declares
        needs=("modules",) runs only when they were gathered."""
        if self.modules is None or self.module_skip is not None:
            raise LookupError("no module facts: declare needs=('modules',) or test ctx.has('modules')")
        return self.modules

    @property
    def headers(self) -> "DraftWeights":
        """The draft's weight facts; a rule that declares needs=("weights",) runs only when they were read."""
        if self.weights is None or self.weights_skip is not None:
            raise LookupError("no weight facts: declare needs=('weights',) or test ctx.has('weights')")
        return self.weights

    # -- locations
    def tloc(self, fld: str, key: Optional[str] = None) -> Location:
        """Location of a target field (key defaults to the key it was read from). A source of the
        form `generation_config.json:eos_token_id` points into that file."""
        where = key or self.target.key(fld)
        file, sep, rest = where.partition(":")
        if sep and file.endswith(".json"):
            return Location(artifact="target", file=file, key=rest)
        return Location(artifact="target", file=self.target.config_file, key=where)

    def dloc(self, fld: str, key: Optional[str] = None) -> Location:
        return Location(artifact="draft", file=self.draft.config_file, key=key or self.draft.key(fld))

    def module_loc(self, path: str) -> Location:
        """A location inside the target's module tree (deep checks)."""
        return Location(artifact="target", file="<module tree>", key=path)

    def tensor_loc(self, name: str, file: str = "model.safetensors") -> Location:
        return Location(artifact="draft", file=file, key=name)

    def at(self, setting: Optional[str] = None, word: Optional["Word"] = None) -> FileLocation:
        """The launch-file location of a setting (where its value is written), of a word, else of the launch."""
        launch = self.launch
        w = word or (launch.where.get(setting) if setting else None)
        if w is None:
            return FileLocation("launch", launch.file, setting or launch.engine, launch.line, launch.column)
        return FileLocation("launch", launch.file, setting or w.text[:60], w.line, w.column)

    def at_version(self) -> FileLocation:
        """Where the launch file states the launch engine's version (its image or its pip pin), else the launch."""
        sel = self.engine_versions.get(self.launch.engine)
        if sel is not None and sel.origin == "launch-file" and sel.line:
            return FileLocation("launch", self.launch.file, f"{sel.engine} {sel.requested}", sel.line, sel.column or 1)
        return self.at()

    def setting(self, name: str) -> Any:
        """A launch setting as written (None: not given)."""
        return self.launch.settings.get(name)
