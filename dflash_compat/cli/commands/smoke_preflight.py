"""smoke's preflight: the checker's config rules on the pair, run before any weight is loaded, so that
`dflash-check smoke` refuses exactly what `dflash-check` calls an error, with the same finding."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from dflash_compat.checker import RuleContext, check_rules
from dflash_compat.checker.findings import Finding
from dflash_compat.contract import DEFAULT_BLOCK_SIZE
from dflash_compat.deployment.options import CheckOptions
from dflash_compat.exceptions import RuntimeUnsupportedError
from dflash_compat.specs import DraftSpec, TargetSpec

__all__ = ["ACCEPTANCE_ONLY", "ENGINE_OF", "RUNTIME_LIMITS", "RUNTIME_READS_ITSELF", "Preflight",
           "preflight", "refusal_line"]

# The backend whose rules a smoke runtime answers to: the torch runtime mirrors the dflash reference
# (`dflash`), the MLX runtime the MLX port (`mlx`).
ENGINE_OF = {"torch": "dflash", "mlx": "mlx"}
# Rules about the reference runtime's own limits: a warning for the check (no engine is concerned),
# a refusal for smoke, which cannot run what they find.
RUNTIME_LIMITS = frozenset({"DF205"})
# Config rules whose verdict the module facts can change (DF201: the built cache may crop exactly).
DEEP_CLEARS = frozenset({"DF201"})
# Rules whose error costs acceptance only: the target verifies every token, so the output stays the target's
# own; the draft just guesses worse (a RoPE base the draft was not trained with, DF117; a target scaling the
# draft does not mirror, DF121). `smoke --force` runs such a pair anyway to show the measured acceptance.
ACCEPTANCE_ONLY = frozenset({"DF117", "DF121"})
# Rules about how an engine's own loader reads a draft family's config, for families whose config the
# reference runtime reads itself (runtime/draft_config.py). The dflash MLX loader cannot read the
# Muse-Glimmer assistant's layout (DF009, DF501: dflash 0.1.0 dflash/model_mlx.py:443-457); our MLX
# runtime can, so smoke does not refuse the assistant for them. The check still reports them for MLX.
RUNTIME_READS_ITSELF = {"muse-glimmer-assistant": frozenset({"DF009", "DF501"})}


@dataclass(frozen=True)
class Preflight:
    """Both specs, as the checker reads them, and the findings smoke refuses the pair for (in report order)."""

    target: TargetSpec
    draft: DraftSpec
    refusals: Sequence[Finding]

    @property
    def draft_block_size(self) -> int:
        return self.draft.block_size if self.draft.block_size is not None else DEFAULT_BLOCK_SIZE


def preflight(target: str, draft: str, backend: str, *, token: Optional[str] = None,
              trust_remote_code: bool = False, adapter: Optional[str] = None, deep: bool = True) -> Preflight:
    """Resolve both configs (no weights), describe them and run every config-only rule for the backend's
    engine. Raises a DFlashCompatError for a config the checker itself refuses, or a draft family the
    runtime does not implement (one line, exit 2)."""
    from dflash_compat.pipeline.check import load_draft, load_target
    from dflash_compat.resolve.refs import resolve
    from dflash_compat.rules import ALL_RULES
    from dflash_compat.runtime.draft_config import refusal

    d_spec = load_draft(resolve(draft, "draft", token=token))
    why = refusal(d_spec)
    if why is not None:  # the family's maths is not in the runtime: nothing else about the pair matters
        raise RuntimeUnsupportedError(f"draft {d_spec.source}: {d_spec.config_file}: {why}")
    t_spec = load_target(resolve(target, "target", token=token))
    ctx = RuleContext(target=t_spec, draft=d_spec, options=CheckOptions(deep=False,
                                                                          trust_remote_code=trust_remote_code))
    results = check_rules(ctx, [r for r in ALL_RULES if not r.needs], (ENGINE_OF[backend],))
    read_itself = RUNTIME_READS_ITSELF.get(d_spec.format, frozenset())

    def refused(findings) -> list[Finding]:
        return [f for f in findings if (f.severity == "error" or f.code in RUNTIME_LIMITS)
                and f.code not in read_itself]

    refusals = refused(results.findings)
    if deep and all(f.code in DEEP_CLEARS for f in refusals):
        # The module rules too (the target built on the meta device, the draft's weight headers read), so that
        # smoke refuses exactly what `dflash-check` fails for this backend, with the same finding; and a config
        # verdict the module facts settle (DF201 on LFM2, whose conv-only cache crops exactly) as the check does.
        deep_found = _deep_findings(target, draft, backend, token, trust_remote_code, adapter)
        # the module and weight rules' findings (the rules that need a build or the weights: the config rules
        # ran above, without one)
        deep_codes = {r.code for r in ALL_RULES if r.needs} | DEEP_CLEARS
        refusals = [f for f in refused(deep_found) if f.code in deep_codes] + [
            f for f in refusals if f.code not in DEEP_CLEARS]
    return Preflight(t_spec, d_spec, refusals)


def _builtin_adapter(target: str, backend: str, token: Optional[str]) -> Optional[str]:
    """The built-in adapter smoke's runtime picks for the target's model_type (adapters/registry.py), by name."""
    from dflash_compat.adapters.registry import adapter_ref
    from dflash_compat.pipeline.check import load_target
    from dflash_compat.resolve.refs import resolve

    spec = load_target(resolve(target, "target", token=token))
    framework = "mlx" if backend == "mlx" else "torch"
    # chosen by the top-level model_type, as adapters/loading.py does for both runtimes
    return spec.model_type if isinstance(spec.model_type, str) and adapter_ref(spec.model_type, framework) else None


def _deep_findings(target: str, draft: str, backend: str, token: Optional[str], trust_remote_code: bool,
                   adapter: Optional[str]) -> Sequence[Finding]:
    """The deep rules' findings for the backend's engine (the config rules already passed)."""
    from dflash_compat.pipeline.check import CheckRequest, run_check

    if adapter is None:  # the runtime runs a listed layout through its built-in adapter: the check sees the same
        adapter = _builtin_adapter(target, backend, token)
    options = CheckOptions(trust_remote_code=trust_remote_code, adapter=adapter, token=token)
    report = run_check(CheckRequest(target=target, draft=draft, backends=(ENGINE_OF[backend],), options=options,
                                    token=token, framework="mlx" if backend == "mlx" else "torch"))
    return list(report.findings)


def refusal_line(finding: Finding) -> str:
    """One stderr line for a refused finding: code, name, the check's message, where, and its fix."""
    where = "; ".join(f"{loc.artifact} {loc.file}: {loc.key}" if loc.key else f"{loc.artifact} {loc.file}"
                      for loc in finding.locations[:2])
    text = f"{finding.code} {finding.name}: {finding.message}" + (f" [{where}]" if where else "")
    text += f"; fix: {finding.fix}" if finding.fix else ""
    return " ".join(text.split())  # a config value's newline must not split the line
