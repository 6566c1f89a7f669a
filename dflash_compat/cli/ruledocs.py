"""Rule documentation, generated from the rules themselves (README table, `rules --format json`)."""

from __future__ import annotations

import json
from typing import Sequence

from dflash_compat.checker import Rule

__all__ = ["rule_doc", "rule_sources_markdown", "rules_json", "rules_markdown"]

SOURCES_DOC = "docs/rule-sources.md"  # generated: every rule's engine sources (engine, release, file:line)


def rule_doc(rule: Rule) -> dict:
    return {
        "code": rule.code,
        "name": rule.name,
        "severity": rule.severity,
        "backends": list(rule.backends),
        "needs": list(rule.needs),
        "what": rule.what,
        "why": rule.why,
        "example": rule.example,
        "fix": rule.fix,
        "versions": dict(rule.versions),
        "sources": [_source_doc(src) for src in rule.sources],
    }


def _version(engine: str) -> str:
    """The newest bundled release of `engine`: the one a rule's typed citation is shown at."""
    from dflash_compat.engines.store import release

    return release(engine).version


def _releases(src) -> list[tuple[str, "str | None"]]:
    """(release, lines or None) of a citation in every bundled release of its engine, oldest first."""
    from dflash_compat.engines.registry import bundled_versions

    return [src.at(v) for v in bundled_versions(src.engine)]


def _source_doc(src) -> dict:
    """A citation at the newest bundled release, with its lines in every bundled release (None: gone)."""
    newest, lines = src.at()
    return {"engine": src.engine, "version": newest, "file": src.path, "lines": lines, "note": src.note,
            "releases": dict(_releases(src))}


def _cite_md(src) -> str:
    """`- vllm 0.34.0 `path:lines`: note` with where the anchor is found in the window."""
    per = _releases(src)
    have = [(v, ln) for v, ln in per if ln is not None]
    if not have:
        return f"- {src.engine} `{src.path}:{src.lines}` (typed; no bundled release): {_cell(src.note)}"
    v, ln = have[-1]
    span = "" if len(have) == len(per) else f" (only in {', '.join(x for x, _ in have)})"
    return f"- {src.engine} {v} `{src.path}:{ln}`{span}: {_cell(src.note)}"


def rules_json(rules: Sequence[Rule]) -> str:
    return json.dumps([rule_doc(r) for r in rules], indent=2)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _engines_cell(rule: Rule) -> str:
    """The engine releases a rule cites, linked to its file:line list in the generated sources document."""
    engines = dict.fromkeys(src.engine for src in rule.sources)  # first-cited order, once each
    if not engines:
        return "none (checker only)"
    names = ", ".join(f"{e} {_version(e)}" for e in engines)
    if rule.versions:
        names += "; holds for " + ", ".join(f"{e}{spec}" for e, spec in rule.versions.items())
    return f"[{names}]({SOURCES_DOC}#{rule.code.lower()})"


def rules_markdown(rules: Sequence[Rule]) -> str:
    lines = [
        "| code | name | severity | backends | what it checks | engine code |",
        "|---|---|---|---|---|---|",
    ]
    for r in rules:
        deep = " (launch files)" if "launch" in r.needs else (" (deep)" if r.needs else "")
        lines.append(
            f"| {r.code} | `{r.name}` | {r.severity} | {', '.join(r.backends)}{deep} | {_cell(r.what)} "
            f"| {_engines_cell(r)} |"
        )
    return "\n".join(lines) + "\n"


def rule_sources_markdown(rules: Sequence[Rule]) -> str:
    """docs/rule-sources.md: for every rule, the engine code its verdict rests on, one line per citation."""
    from dflash_compat.engines.registry import ENGINES, bundled_versions

    releases = "; ".join(f"{name} {', '.join(bundled_versions(name))}" for name in ENGINES if bundled_versions(name))
    lines = [
        "# Engine sources of every rule",
        "",
        "Generated from the rules' `sources` by `python -m dflash_compat.cli.ruledocs` (a test keeps it current).",
        "Each citation is an anchor (the class or function holding it and the code it contains) resolved in every",
        f"bundled release; shown here at the newest one. Bundled releases: {releases}.",
        "Paths are relative to each wheel's top package. `dflash-check rule DFxxx --engine-version NAME==VERSION`",
        "and the SARIF rule help show the lines of the release checked.",
    ]
    for r in rules:
        holds = "; holds for " + ", ".join(f"{e}{spec}" for e, spec in r.versions.items()) if r.versions else ""
        lines += ["", f"## {r.code}", "", f"`{r.name}` ({r.severity}; {', '.join(r.backends)}{holds})", ""]
        if not r.sources:
            lines.append("- none: the rule reports on the checker's own inspection, not on an engine")
        lines += [_cite_md(src) for src in r.sources]
    return "\n".join(lines) + "\n"


START, END = "<!-- rules:start -->", "<!-- rules:end -->"
SHIM_START, SHIM_END = "<!-- gpt2-shim:start -->", "<!-- gpt2-shim:end -->"

# GPT-2's published config, abridged to what the adapter generator reads.
GPT2_CONFIG = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768, "n_layer": 12,
               "n_head": 12, "n_positions": 1024, "vocab_size": 50257}


def gpt2_shim() -> str:
    """What `dflash-check adapt gpt2` prints for a folder holding GPT-2's config (needs torch): the
    same generator the command calls."""
    import tempfile
    from pathlib import Path

    from dflash_compat.adapters.shim import render_shim
    from dflash_compat.cli.commands.adapt import plan_for_target

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gpt2"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(GPT2_CONFIG))
        return render_shim(plan_for_target(str(folder)))


def readme_blocks() -> dict[tuple[str, str], str]:
    """The generated parts of README.md, by their markers."""
    from dflash_compat.rules import ALL_RULES

    return {
        (START, END): rules_markdown(ALL_RULES),
        (SHIM_START, SHIM_END): "\n```python\n" + gpt2_shim() + "```\n\n",
    }


def generated_docs() -> dict[str, str]:
    """Whole documents generated from the rules, by their path from the repository root."""
    from dflash_compat.rules import ALL_RULES

    return {SOURCES_DOC: rule_sources_markdown(ALL_RULES)}


CHANGES_DOC = "docs/engine-facts.md"
CHANGES_START, CHANGES_END = "<!-- engine-changes:start -->", "<!-- engine-changes:end -->"
_CHANGE_KINDS = {  # the facts whose change between releases the table shows, per engine
    "vllm": ("features", "draft_architectures", "draft_v1_refused", "method_config_modules", "supported",
             "speculators_formats"),
    "sglang": ("features", "draft_architectures", "supported", "hook_delegated_to_missing"),
    "transformers": ("features", "stateful_model_types", "recurrent_layer_model_types", "recurrent_layer_types"),
    "mlx-lm": ("non_trimmable_model_types", "replay_model_types", "rotating_kv_cache_model_types", "cache_classes"),
    "speculators": ("formats",),
    "dflash": ("draft_architectures",),
}


def _names_of(value) -> set:
    return set(value) if isinstance(value, (list, dict)) else set()


def engine_changes_markdown() -> str:
    """What changed between consecutive bundled releases of each engine, computed from the facts."""
    from dflash_compat.engines.registry import bundled_versions
    from dflash_compat.engines.store import release

    lines = ["| engine | release | what changed (from the previous bundled release) |", "|---|---|---|"]
    for engine, kinds in _CHANGE_KINDS.items():
        versions = bundled_versions(engine)
        lines.append(f"| {engine} | {versions[0]} | first bundled release |")
        for old, new in zip(versions, versions[1:]):
            a, b = release(engine, old).facts, release(engine, new).facts
            parts = []
            for kind in kinds:
                added = sorted(_names_of(b.get(kind)) - _names_of(a.get(kind)))
                removed = sorted(_names_of(a.get(kind)) - _names_of(b.get(kind)))
                if not added and not removed:
                    continue
                def show(names):
                    return ", ".join(f"`{n}`" for n in names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6
                                                                     else "")
                bits = ([f"+{show(added)}"] if added else []) + ([f"-{show(removed)}"] if removed else [])
                parts.append(f"{kind}: {'; '.join(bits)}")
            lines.append(f"| {engine} | {new} | {_cell('<br>'.join(parts)) if parts else 'no change in these facts'} |")
    return "\n".join(lines) + "\n"


def doc_blocks() -> dict[str, dict[tuple[str, str], str]]:
    """Generated blocks inside hand-written documents."""
    return {CHANGES_DOC: {(CHANGES_START, CHANGES_END): engine_changes_markdown()}}


def update_blocks() -> list[str]:
    changed = []
    for path, blocks in doc_blocks().items():
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        new = text
        for (start, end), body in blocks.items():
            head, _, rest = new.partition(start)
            _, _, tail = rest.partition(end)
            new = f"{head}{start}\n{body}{end}{tail}"
        if _write_if_changed(path, new, text):
            changed.append(path)
    return changed


def _write_if_changed(path: str, new: str, old: str) -> bool:
    if new != old:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    return new != old


def update_readme(path: str = "README.md") -> bool:
    """Rewrite every generated block of README.md; True when the file changed."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    new = text
    for (start, end), body in readme_blocks().items():
        head, _, rest = new.partition(start)
        _, _, tail = rest.partition(end)
        new = f"{head}{start}\n{body}{end}{tail}"
    return _write_if_changed(path, new, text)


def update_generated_docs() -> list[str]:
    """Rewrite every generated document; the paths that changed."""
    changed = []
    for path, body in generated_docs().items():
        try:
            with open(path, encoding="utf-8") as fh:
                old = fh.read()
        except FileNotFoundError:
            old = ""
        if _write_if_changed(path, body, old):
            changed.append(path)
    return changed


if __name__ == "__main__":  # python -m dflash_compat.cli.ruledocs  (run from the repo root)
    changed = (["README.md"] if update_readme() else []) + update_generated_docs() + update_blocks()
    print(f"updated: {', '.join(changed)}" if changed else "README.md and generated docs already current")
