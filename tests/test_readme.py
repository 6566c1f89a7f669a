"""The README opens with the two commands a new user runs; CI runs the second one verbatim."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```(?:bash|sh)?\n(.*?)```", text, flags=re.S)
    return [b.strip() for b in blocks[:2]]


def test_readme_opens_with_two_commands():
    first, second = _readme_commands()
    assert "dflash-check examples/" in first
    assert "pytest" in second
    head = (ROOT / "README.md").read_text().split("```")[0]
    assert "```" not in head and len(head.splitlines()) < 12, "the commands come first"


def test_ci_runs_the_readme_test_command():
    _, second = _readme_commands()
    ci = (ROOT / ".ci" / "run").read_text()
    assert second in ci.splitlines()


def test_readme_generated_blocks_are_current():
    """The rule table and the GPT-2 shim example are generated; `python -m dflash_compat.docs` refreshes them."""
    from dflash_compat.docs import readme_blocks

    text = (ROOT / "README.md").read_text()
    for (start, end), body in readme_blocks().items():
        assert start in text and end in text, start
        assert text.split(start)[1].split(end)[0] == "\n" + body, f"{start}: run python -m dflash_compat.docs"


def test_cited_documents_are_in_the_repository():
    """Docs, messages and data cite only documents this repository has (no team-internal paths)."""
    cited = []
    for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "dflash_compat").rglob("*.py"),
                 *(ROOT / "dflash_compat").rglob("*.json"), *(ROOT / "rules").glob("*.py")]:
        text = path.read_text(encoding="utf-8")
        assert "shared/" not in text, f"{path} cites a path outside the repository"
        assert not re.search(r"fact sheet|dflash-contract\.md", text, flags=re.I), f"{path} cites the team's notes"
        cited += [(path, doc) for doc in re.findall(r"\bdocs/[\w.-]+\.md\b", text)]
    for path, doc in cited:
        assert (ROOT / doc).is_file(), f"{path.relative_to(ROOT)} cites {doc}, which is not in the repository"
