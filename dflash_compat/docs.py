"""Rule documentation, generated from the rules themselves (README table, `rules --format json`)."""

from __future__ import annotations

import json
from typing import Sequence

from .engine import Rule

__all__ = ["rule_doc", "rules_json", "rules_markdown"]


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
    }


def rules_json(rules: Sequence[Rule]) -> str:
    return json.dumps([rule_doc(r) for r in rules], indent=2)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def rules_markdown(rules: Sequence[Rule]) -> str:
    lines = [
        "| code | name | severity | backends | what it checks |",
        "|---|---|---|---|---|",
    ]
    for r in rules:
        deep = " (deep)" if r.needs else ""
        lines.append(
            f"| {r.code} | `{r.name}` | {r.severity} | {', '.join(r.backends)}{deep} | {_cell(r.what)} |"
        )
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


def update_readme(path: str = "README.md") -> bool:
    """Rewrite every generated block of README.md; True when the file changed."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    new = text
    for (start, end), body in readme_blocks().items():
        head, _, rest = new.partition(start)
        _, _, tail = rest.partition(end)
        new = f"{head}{start}\n{body}{end}{tail}"
    if new != text:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    return new != text


if __name__ == "__main__":  # python -m dflash_compat.docs  (run from the repo root)
    print("README.md updated" if update_readme() else "README.md already current")
