"""Rule documentation, generated from the rules themselves (README table, `rules --format json`)."""

from __future__ import annotations

import json
from typing import Sequence

from .engine import Rule

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
        "sources": [{"engine": src.engine, "version": _version(src.engine), "file": src.path, "lines": src.lines,
                     "note": src.note} for src in rule.sources],
    }


def _version(engine: str) -> str:
    from .contract import ENGINE_BUILDS, ENGINE_VERSIONS

    return ENGINE_VERSIONS.get(engine) or ENGINE_BUILDS[engine]


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
    return f"[{names}]({SOURCES_DOC}#{rule.code.lower()})"


def rules_markdown(rules: Sequence[Rule]) -> str:
    lines = [
        "| code | name | severity | backends | what it checks | engine code |",
        "|---|---|---|---|---|---|",
    ]
    for r in rules:
        deep = " (deep)" if r.needs else ""
        lines.append(
            f"| {r.code} | `{r.name}` | {r.severity} | {', '.join(r.backends)}{deep} | {_cell(r.what)} "
            f"| {_engines_cell(r)} |"
        )
    return "\n".join(lines) + "\n"


def rule_sources_markdown(rules: Sequence[Rule]) -> str:
    """docs/rule-sources.md: for every rule, the engine code its verdict rests on, one line per citation."""
    from .contract import ENGINE_VERSIONS

    releases = ", ".join(f"{name} {version}" for name, version in ENGINE_VERSIONS.items())
    lines = [
        "# Engine sources of every rule",
        "",
        "Generated from the rules' `sources` by `python -m dflash_compat.docs` (a test keeps it current).",
        f"Paths are relative to each wheel's top package; releases: {releases}.",
        "`dflash-check rule DFxxx` and the SARIF rule help show the same list.",
    ]
    for r in rules:
        lines += ["", f"## {r.code}", "", f"`{r.name}` ({r.severity}; {', '.join(r.backends)})", ""]
        if not r.sources:
            lines.append("- none: the rule reports on the checker's own inspection, not on an engine")
        lines += [f"- {src.engine} {_version(src.engine)} `{src.path}:{src.lines}`: {_cell(src.note)}"
                  for src in r.sources]
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

    from .adapters.shim import render_shim
    from .commands.adapt import plan_for_target

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gpt2"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(GPT2_CONFIG))
        return render_shim(plan_for_target(str(folder)))


def readme_blocks() -> dict[tuple[str, str], str]:
    """The generated parts of README.md, by their markers."""
    from .rules import ALL_RULES

    return {
        (START, END): rules_markdown(ALL_RULES),
        (SHIM_START, SHIM_END): "\n```python\n" + gpt2_shim() + "```\n\n",
    }


def generated_docs() -> dict[str, str]:
    """Whole documents generated from the rules, by their path from the repository root."""
    from .rules import ALL_RULES

    return {SOURCES_DOC: rule_sources_markdown(ALL_RULES)}


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


if __name__ == "__main__":  # python -m dflash_compat.docs  (run from the repo root)
    changed = (["README.md"] if update_readme() else []) + update_generated_docs()
    print(f"updated: {', '.join(changed)}" if changed else "README.md and generated docs already current")
