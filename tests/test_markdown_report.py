"""`--format markdown`: the compact report for a job summary or a pull-request comment (its goldens are in
test_golden_reports.py); here: hostile values stay inert, -o may replace its own output, the settings file
accepts the format."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.emitters import get_renderer, looks_like_report
from dflash_compat.emitters.markdown import md
from tests.test_golden_reports import hand_built_report
from tests.test_output_injection import hostile_report

ROOT = Path(__file__).resolve().parent.parent
BAD = ("examples/llama-with-qwen3-draft/target", "examples/llama-with-qwen3-draft/draft")


def test_layout_verdict_table_findings_and_collapsed_details():
    out = get_renderer("markdown")(hand_built_report())
    assert out.startswith("### ❌ dflash-check: the draft does not fit the target\n")
    assert "| transformers | ❌ **fail** | 2 | 1 | 1 | 2 |" in out
    assert "**DF101**" in out and "at draft:config.json:hidden\\_size" in out and "**fix:** Use 15." in out
    details = out[out.index("<details>"):out.index("</details>")]
    assert "DF113" in details and "DF251" in details and "vllm 0.34.0 (option)" in details  # infos, skipped, versions
    assert "DF101" not in details


def test_a_hostile_value_cannot_add_markup_links_html_rows_or_mentions():
    text = "x | y <script>alert(1)</script> [click](http://evil) ![i](http://evil/i.png) @octocat `c` *b* \x1b[31m"
    out = get_renderer("markdown")(hostile_report(text))
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "](http" not in out.replace("\\](http", "")  # every link bracket is escaped
    assert "@octocat" not in out and "&#64;octocat" in out
    assert "\x1b" not in out
    for line in out.splitlines():  # table rows keep their six cells
        if line.startswith("| ") and "backend" not in line:
            assert len(re.findall(r"(?<!\\)\|", line)) == 7, line


def test_md_escapes_inline_markup_only():
    assert md("a_b *c* [d] `e` | ~f~ <g> & @h") == "a\\_b \\*c\\* \\[d\\] \\`e\\` \\| \\~f\\~ &lt;g&gt; &amp; &#64;h"
    assert md("line\nbreak") == "line break"


def test_cli_markdown_and_o_replaces_its_own_report(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "summary.md"
    for _ in range(2):  # the second run replaces the first one's file without --force
        res = CliRunner().invoke(cli, [BAD[0], "--draft", BAD[1], "--no-deep", "-f", "markdown", "-o", str(out)])
        assert res.exit_code == 1, res.output
    assert looks_like_report(out.read_bytes()[:4096])
    assert "DF104" in out.read_text()


def test_settings_file_format_markdown(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    cfg = tmp_path / "dflash-check.toml"
    cfg.write_text(f'target = "{ROOT / BAD[0]}"\ndraft = "{ROOT / BAD[1]}"\nformat = "markdown"\n')
    res = CliRunner().invoke(cli, ["check", "--config", str(cfg), "--no-deep"])
    assert res.exit_code == 1, res.output
    assert res.output.startswith("### ")
