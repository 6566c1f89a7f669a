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
    """The rule table and the GPT-2 shim example are generated; `python -m dflash_compat.cli.ruledocs` refreshes them."""
    from dflash_compat.cli.ruledocs import readme_blocks

    text = (ROOT / "README.md").read_text()
    for (start, end), body in readme_blocks().items():
        assert start in text and end in text, start
        assert text.split(start)[1].split(end)[0] == "\n" + body, f"{start}: run python -m dflash_compat.cli.ruledocs"


def test_generated_docs_are_current():
    """docs/rule-sources.md (every rule's engine citations) is generated like the README's rule table."""
    from dflash_compat.cli.ruledocs import generated_docs

    for path, body in generated_docs().items():
        assert (ROOT / path).read_text() == body, f"{path}: run python -m dflash_compat.cli.ruledocs"


def test_rule_table_links_each_rules_engine_sources():
    """The README rule table names each rule's engine releases and links its file:line list."""
    from dflash_compat.rules import RULES_BY_CODE

    table = (ROOT / "README.md").read_text().split("<!-- rules:start -->")[1].split("<!-- rules:end -->")[0]
    sources = (ROOT / "docs" / "rule-sources.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| DF302 "))
    from dflash_compat.engines.registry import bundled_versions

    newest = bundled_versions("vllm")[-1]
    assert f"[vllm {newest}](docs/rule-sources.md#df302)" in row
    section = sources.split("## DF302\n")[1].split("\n## ")[0]
    for src in RULES_BY_CODE["DF302"].sources:
        release, lines = src.at()  # the newest bundled release's lines; a citation gone there: its last one
        if lines is not None:
            assert f"- vllm {newest} `{src.path}:{lines}`: {src.note}" in section
        else:
            assert f"`{src.path}:" in section and "(only in " in section


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
