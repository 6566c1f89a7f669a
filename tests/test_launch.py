"""`dflash-check launch`: finding launches in each kind of file, reading their words and positions, the
output formats, bad input and hostile strings."""

from __future__ import annotations

import json
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli
from dflash_compat.launch.parse import find_launch, image_version
from dflash_compat.launch.shellwords import ShellSyntaxError, split_commands
from dflash_compat.launch.sources import LaunchFileError, Pin, candidates, pins_in
from dflash_compat.pipeline.launch import LaunchSettings, check_text, launch_options

REPO = Path(__file__).resolve().parent.parent
SPEC = '{"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16", "num_speculative_tokens": 15}'
NO_PAIR = LaunchSettings(pair=False)


def launches(name: str, text: str):
    _, cands = candidates(name, text)
    return [launch for c in cands if (launch := find_launch(c)) is not None]


def run(*args: str):
    return CliRunner().invoke(cli, ["launch", "--no-config", *args])


# ------------------------------------------------------------------------------------------ shell words


@pytest.mark.parametrize("line", [
    "a b c", "a 'b c' d", 'a "b c" d', 'a "b \\" c" d', "a b\\ c", "a 'it'\"'\"'s' x", '"" x', "a\\\\b",
    "--speculative-config '" + SPEC + "'", '--sc "{\\"a\\": 1}"', "x=1 y='2 3' cmd", "a 'b\"c' \"d'e\"",
])
def test_words_match_shlex(line):
    """Quote removal is POSIX's, as shlex applies it (on lines without expansions or separators)."""
    [cmd] = split_commands(line, assign=False)
    assert [w.text for w in cmd.words] == shlex.split(line)


def test_positions_continuations_separators_and_comments():
    text = "A=1 # c\nexec vllm serve m \\\n  --x 'y z' && echo ok; ls # tail\n"
    cmds = split_commands(text)
    assert [[w.text for w in c.words] for c in cmds] == [["A=1"], ["exec", "vllm", "serve", "m", "--x", "y z"],
                                                       ["echo", "ok"], ["ls"]]
    x = cmds[1].words[4]
    assert (x.line, x.column) == (3, 3) and (cmds[1].words[5].line, cmds[1].words[5].column) == (3, 7)


def test_variables_expand_in_order_and_never_in_single_quotes():
    text = 'M=org/m\nexport TP=2\nrun $M "${TP}" \'$M\' ${N:-4} $UNSET "$(date)"\nM=other\n'
    words = split_commands(text)[2].words
    assert [w.text for w in words] == ["run", "org/m", "2", "$M", "4", "$UNSET", "$(date)"]
    assert words[5].unresolved == ("UNSET",) and words[6].unresolved == ("$(...)",)


def test_redirections_and_here_documents_are_not_words():
    text = ("cat > notes.txt <<'EOF'\ndon't run: vllm serve x\nEOF\n"
            "vllm serve m --port 1 > log.txt 2>&1 &\ncat <<-END\n\tllama-server -m x\n\tEND\nnohup vllm serve n &> out\n")
    cmds = [[w.text for w in c.words] for c in split_commands(text)]
    assert cmds == [["cat"], ["vllm", "serve", "m", "--port", "1"], ["cat"], ["nohup", "vllm", "serve", "n"]]
    assert [x.target for x in launches("run.sh", text)] == ["m", "n"]


def test_docker_run_gives_the_image_and_its_entrypoint():
    [vllm, sglang] = launches("run.sh", (
        "docker run --gpus all -p 8000:8000 vllm/vllm-openai:v0.33.0 --model Qwen/Qwen3-8B\n"
        "podman run lmsysorg/sglang:v0.5.23 python3 -m sglang.launch_server --model-path T\n"))
    assert (vllm.engine, vllm.image, vllm.target, vllm.column) == ("vllm", "vllm/vllm-openai:v0.33.0", "Qwen/Qwen3-8B",
                                                                   61)
    assert (sglang.engine, sglang.image, sglang.target) == ("sglang", "lmsysorg/sglang:v0.5.23", "T")


def test_deeply_nested_yaml_is_bad_input():
    with pytest.raises(LaunchFileError):
        candidates("k.yaml", "a: " + "[" * 5000 + "]" * 5000 + "\n")


@pytest.mark.parametrize("text", ["vllm serve 'x", 'vllm serve "x', "echo $(date", "echo ${X"])
def test_unbalanced_quotes_are_errors_with_a_line(text):
    with pytest.raises(ShellSyntaxError) as e:
        split_commands("ok\n" + text)
    assert e.value.line == 2


# -------------------------------------------------------------------------------------------- engines


def test_every_engine_entry_point_is_found():
    text = "\n".join([
        f"vllm serve Qwen/Qwen3-8B --speculative-config '{SPEC}'",
        f"python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B --speculative_config '{SPEC}' -tp 2",
        "python -m sglang.launch_server --model-path T --speculative-algorithm DFLASH --speculative-draft-model-path D",
        "/opt/llama/llama-server -m t.gguf -md d.gguf --spec-type draft-dflash",
        "llama-cli -m t.gguf --model-draft d.gguf",
        "dflash generate mlx --model T --draft D --block-size 16 'hi'",
        "CUDA_VISIBLE_DEVICES=0 nohup dflash generate transformers --model T --draft D --block-size 16 x &",
        "echo vllm serve is not run here; pip install vllm",
    ])
    found = launches("run.sh", text)
    assert [(x.engine, x.line) for x in found] == [("vllm", 1), ("vllm", 2), ("sglang", 3), ("llama.cpp", 4),
                                                   ("llama.cpp", 5), ("mlx", 6), ("transformers", 7)]
    vllm2 = found[1]
    assert vllm2.target == "Qwen/Qwen3-8B" and vllm2.draft == "z-lab/Qwen3-8B-DFlash-b16"
    assert vllm2.settings["tp"] == 2 and vllm2.settings["num_speculative_tokens"] == 15
    assert launch_options(vllm2)["num_speculative_tokens"] == 15 and launch_options(vllm2)["tp"] == 2
    assert found[3].draft == "d.gguf" and found[4].draft == "d.gguf"
    assert found[5].target == "T" and found[5].settings["block_size"] == 16


def test_sglang_options_map_onto_check_options():
    text = ("python3 -m sglang.launch_server --model-path T --speculative-algorithm DFLASH "
            "--speculative-draft-model-path D --speculative-num-draft-tokens 16 --tp-size 4 --pp-size 2 "
            "--dp-size 4 --enable-dp-attention --quantization fp8 --speculative-draft-model-quantization unquant "
            "--speculative-dflash-block-size 8 --speculative-draft-window-size 12 --max-running-requests 32")
    [launch] = launches("s.sh", text)
    want = {"tp": 4, "pp_size": 2, "sglang_num_draft_tokens": 16, "sglang_dflash_block_size": 8,
            "sglang_draft_window_size": 12, "sglang_attn_dp_size": 4, "sglang_enable_dp_lm_head": False,
            "max_num_seqs": 32, "sglang_quantization": "fp8", "sglang_draft_quantization": "unquant",
            "engine": "sglang", "complete": True, "num_speculative_tokens": None, "draft_tp": None}
    options = launch_options(launch)
    assert {k: options[k] for k in want} == want


def test_dockerfile_exec_and_shell_forms_with_env_and_arg():
    text = (
        "ARG TAG=v0.34.0\nFROM vllm/vllm-openai:v0.34.0 AS serve\nENV DRAFT=z-lab/d TP=2\n"
        'ENTRYPOINT ["vllm", "serve"]\nCMD ["Qwen/Qwen3-8B", \\\n     "--speculative-config", '
        '"{\\"method\\": \\"dflash\\", \\"model\\": \\"z-lab/d\\"}"]\n'
        "FROM lmsysorg/sglang:v0.5.23\n"
        "CMD python3 -m sglang.launch_server --model-path T --speculative-algorithm DFLASH \\\n"
        "    --speculative-draft-model-path $DRAFT --tp-size ${TP}\n"
    )
    first, second = launches("Dockerfile", text)
    assert first.engine == "vllm" and first.target == "Qwen/Qwen3-8B" and first.draft == "z-lab/d"
    assert first.image == "vllm/vllm-openai:v0.34.0" and (first.line, first.column) == (4, 13)
    assert first.where["draft"].line == 6
    assert second.engine == "sglang" and second.draft == "z-lab/d" and second.settings["tp"] == 2
    assert second.image == "lmsysorg/sglang:v0.5.23" and second.where["draft"].line == 9


def test_compose_string_list_and_image_entrypoint():
    text = (
        "services:\n"
        "  a:\n    image: vllm/vllm-openai:v0.33.0\n"
        "    command: --model Qwen/Qwen3-8B --tensor-parallel-size 2\n"
        "  b:\n    image: ghcr.io/ggml-org/llama.cpp:server-b11434\n"
        "    command: [\"-m\", \"/m/t.gguf\", \"-md\", \"/m/d.gguf\", \"--spec-type\", \"draft-dflash\"]\n"
        "  c:\n    image: busybox\n    command: [sh, -c, 'llama-server -m t.gguf -md d.gguf -sm tensor']\n"
        "  d:\n    image: redis\n    command: redis-server\n"
    )
    a, b, c = launches("docker-compose.yml", text)
    assert (a.engine, a.target, a.settings["tp"], a.line, a.column) == ("vllm", "Qwen/Qwen3-8B", 2, 4, 14)
    assert (b.engine, b.draft, b.line) == ("llama.cpp", "/m/d.gguf", 7)
    assert (c.engine, c.settings["split_mode"], c.where["split_mode"].line) == ("llama.cpp", "tensor", 10)
    assert c.where["split_mode"].column == text.split("\n")[9].index("tensor") + 1


def test_kubernetes_multi_document_with_env_references():
    text = (
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\n"
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      containers:\n"
        "        - name: vllm\n          image: vllm/vllm-openai:v0.33.0\n"
        "          env: [{name: TP, value: \"4\"}]\n"
        "          command: [vllm, serve]\n"
        "          args: [Qwen/Qwen3-8B, --tensor-parallel-size, $(TP), --max-num-seqs, $(SEQS)]\n"
    )
    [launch] = launches("job.yaml", text)
    assert launch.context == "Job/j container vllm" and launch.settings["tp"] == 4
    assert launch.unresolved["max_num_seqs"][1] == ("SEQS",)


def test_workflow_run_steps_with_env():
    text = (
        "on: push\nenv:\n  MODEL: Qwen/Qwen3-8B\njobs:\n  serve:\n    runs-on: gpu\n    steps:\n"
        "      - run: echo start\n"
        "      - env:\n          K: '7'\n        run: |\n          pip install 'vllm==0.33.0'\n"
        "          vllm serve $MODEL --port ${{ matrix.port }} \\\n"
        "            --speculative-config \"{\\\"method\\\": \\\"dflash\\\", \\\"model\\\": \\\"d\\\", "
        "\\\"num_speculative_tokens\\\": $K}\"\n"
    )
    kind, _ = candidates(".github/workflows/serve.yml", text)
    [launch] = launches(".github/workflows/serve.yml", text)
    assert kind == "workflow" and launch.target == "Qwen/Qwen3-8B" and launch.settings["num_speculative_tokens"] == 7
    assert (launch.line, launch.column) == (13, 11) and launch.context == "job serve step 2"
    assert pins_in(text) == {"vllm": Pin("0.33.0", 12, 24)}


@pytest.mark.parametrize("image,version", [
    ("vllm/vllm-openai:v0.33.0", "0.33.0"), ("docker.io/vllm/vllm-openai:0.34.0", "0.34.0"),
    ("lmsysorg/sglang:v0.5.23-cu129-amd64", "0.5.23"), ("ghcr.io/ggml-org/llama.cpp:server-b11434", "b11434"),
    ("ghcr.io/ggml-org/llama.cpp:server-cuda-b9235", "b9235"), ("vllm/vllm-openai:latest", None),
    ("ghcr.io/ggml-org/llama.cpp:server", None), ("nginx:1.2.3", None), (None, None),
])
def test_image_versions(image, version):
    assert image_version(image) == version


# ---------------------------------------------------------------------------------------- the command


def test_one_command_line_and_json_document():
    line = f"vllm serve Qwen/Qwen3-8B --speculative-config '{SPEC}' --tensor-parallel-size 2 --bogus-flag 1"
    result = run("--no-pair", "--format", "json", "-c", line, "-c", "llama-server -m t.gguf -md d.gguf --draft 8")
    doc = json.loads(result.output)
    assert result.exit_code == 1 and len(doc["launches"]) == 2
    first, second = doc["launches"]
    assert first["file"] == "<command 1>" and first["settings"]["tp"] == 2
    bogus = [f for f in first["report"]["findings"] if f["code"] == "DF901"]
    assert bogus and bogus[0]["locations"][0] == {"artifact": "launch", "file": "<command 1>", "key": "--bogus-flag",
                                                  "line": 1, "column": line.index("--bogus") + 1}
    assert [f["code"] for f in second["report"]["findings"] if f["code"] == "DF901"] == ["DF901"]
    assert doc["exit_code"] == 1 and doc["tool"]["name"] == "dflash-check"


def test_sarif_github_junit_and_markdown_mark_file_line_column(tmp_path):
    path = tmp_path / "serve.sh"
    path.write_text("#!/bin/sh\nllama-server -m t.gguf -md d.gguf --spec-type draft-dflash \\\n"
                    "  --spec-draft-p-min 0.75 -ctkd q8_0\n")
    sarif = json.loads(run("--no-pair", "-f", "sarif", str(path)).output)
    from tests.test_output_injection import SARIF

    SARIF.validate(sarif)
    results = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "DF904"]
    region = results[0]["locations"][0]["physicalLocation"]
    assert region["region"] == {"startLine": 3, "startColumn": 33}  # the value to change
    assert region["artifactLocation"]["uri"].endswith("serve.sh")
    github = run("--no-pair", "-f", "github", str(path)).output
    assert f"::warning file={path},line=3,col=33,title=DF904" in github
    root = ET.fromstring(run("--no-pair", "-f", "junit", "--strict", str(path)).output)
    case = next(c for c in root.iter("testcase") if c.get("name").startswith("DF904"))
    assert case.get("line") == "3" and case.find("failure") is not None and case.get("file") == str(path)
    md = run("--no-pair", "-f", "markdown", str(path)).output
    assert f"| `{path}:3:33` | warning | DF904 llamacpp-draft-kv-cache-quantized |" in md


def test_fix_prints_the_corrected_command(tmp_path):
    path = tmp_path / "serve.sh"
    path.write_text("llama-server -m t.gguf -md d.gguf --spec-type draft-dflash --draft-max 15 "
                    "--spec-draft-p-min 0.75 -ctkd q8_0 -sm tensor\n")
    out = run("--no-pair", "--fix", str(path)).output
    fixed = out.split("corrected command:")[1].split("verdict")[0]
    words = shlex.split(fixed.replace("\\\n", " "))
    assert words == ["llama-server", "-m", "t.gguf", "-md", "d.gguf", "--spec-type", "draft-dflash",
                     "--spec-draft-n-max", "15", "--spec-draft-p-min", "0.75", "-ctkd", "f16", "-sm", "layer"]
    assert path.read_text().count("--draft-max") == 1  # the file is never changed


def test_vllm_fix_drops_the_unknown_key_and_sets_the_dspark_method():
    spec = '{"method": "dflash", "model": "org/dspark_x", "num_speculative_tokens": 6, "use_heterogeneous_vocab": true}'

    def fixed_spec(version):
        [fr] = [check_text("x", f"vllm serve T --speculative-config '{spec}'", LaunchSettings(
            pair=False, engine_versions={"vllm": version}))]
        fixed = fr.launches[0].fixed
        return json.loads(fixed[fixed.index("--speculative-config") + 1])

    # 0.34.0 has no use_heterogeneous_vocab key (DF902); DF906 holds for the releases before it
    assert fixed_spec("0.34.0") == {"method": "dflash", "model": "org/dspark_x", "num_speculative_tokens": 6}
    assert fixed_spec("0.33.0") == {"method": "dspark", "model": "org/dspark_x", "num_speculative_tokens": 6,
                                    "use_heterogeneous_vocab": True}


def test_bad_input_is_one_line_with_file_and_line(tmp_path):
    bad = tmp_path / "compose.yaml"
    bad.write_text("services:\n  a:\n    command: [oops\n")
    result = CliRunner().invoke(cli, ["launch", "--no-config", str(bad)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [f"dflash-check: error: {bad}:4: not valid YAML: expected ',' or "
                                                  "']', but got '<stream end>'"]
    quote = tmp_path / "run.sh"
    quote.write_text("echo ok\nvllm serve 'Qwen/Qwen3-8B --port 1\n")
    result = CliRunner().invoke(cli, ["launch", "--no-config", str(quote)])
    assert result.exit_code == 2 and f"{quote}:2: unbalanced single quote" in result.output
    # YAML is composed into nodes by the safe loader: a tag never constructs (runs) anything
    assert candidates("k.yaml", "a: !!python/object/apply:os.system [touch x]\n") == ("yaml", [])
    with pytest.raises(LaunchFileError):
        candidates("k.yaml", "a: [\n")
    assert run(str(tmp_path / "missing.sh")).exit_code == 2


def test_a_file_without_a_launch(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text("FROM python:3.12\nRUN pip install flask\nCMD [\"flask\", \"run\"]\n")
    result = run(str(path))
    assert result.exit_code == 0 and "no engine launch found (dockerfile)" in " ".join(result.output.split())
    result = run("--require-launch", str(path))
    assert result.exit_code == 2 and "no engine launch found (--require-launch)" in result.output


def test_hostile_strings_are_escaped_in_every_format(tmp_path):
    path = tmp_path / "evil.sh"
    path.write_text("vllm serve T --speculative-config '{\"method\": \"dflash\", \"model\": \"d\\u001b[2J\"}' "
                    "--ev\x1b]0;pwned\x07il 1 --x\u202e 2\n")
    for fmt in ("text", "github", "junit", "markdown"):
        out = run("--no-pair", "-f", fmt, str(path)).output
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, fmt
        assert "\\x1b" in out, fmt
    for fmt in ("json", "sarif"):
        out = run("--no-pair", "-f", fmt, str(path)).output
        assert "\x1b" not in out and json.loads(out)


def test_settings_file_select_and_engine_versions(tmp_path, monkeypatch):
    (tmp_path / "dflash-check.toml").write_text(
        'target = "ignored/by-launch"\nselect = ["DF90"]\n[engine-versions]\nvllm = "0.33.0"\n')
    (tmp_path / "run.sh").write_text(f"vllm serve T --speculative-config '{SPEC}' --bogus 1\n")
    monkeypatch.chdir(tmp_path)
    doc = json.loads(CliRunner().invoke(cli, ["launch", "--no-pair", "-f", "json", "run.sh"]).output)
    launch = doc["launches"][0]
    assert launch["engine_version"]["version"] == "0.33.0" and launch["engine_version"]["origin"] == "config"
    assert {f["code"] for f in launch["report"]["findings"]} == {"DF901"}


def test_pair_check_runs_with_the_launch_options(monkeypatch):
    monkeypatch.chdir(REPO)
    pair = "tests/fixtures/pairs/qwen3-8b"
    spec = json.dumps({"method": "dflash", "model": f"{pair}/draft", "num_speculative_tokens": 20})
    line = f"vllm serve {pair}/target --speculative-config '{spec}' --tensor-parallel-size 2"
    fr = check_text("x.sh", line, LaunchSettings(deep=False))
    report = fr.launches[0].report
    df303 = [f for f in report.findings if f.code == "DF303"]
    assert df303 and (df303[0].locations[0].line, df303[0].locations[0].column) == (1, line.index("'{") + 1)
    # no pin: the launch rules and the pair rules both judge the newest bundled vLLM release
    assert report.target["model_type"] == "qwen3" and fr.launches[0].version.version == "0.34.0"
    assert report.engines["vllm"]["version"] == "0.34.0"
    fixed = fr.launches[0].fixed
    assert json.loads(fixed[fixed.index("--speculative-config") + 1])["num_speculative_tokens"] == 15


def test_the_pinned_version_reaches_the_project_wide_selection():
    """The launch file's pin is the launch engine's release (origin launch-file, where it is written); the
    other engines follow --engine-version, the settings file, else the newest bundled (never what is
    installed here: the file describes a deployment elsewhere)."""
    from dflash_compat.launch.parse import find_launch
    from dflash_compat.launch.sources import candidates
    from dflash_compat.launch.versions import launch_versions

    text = "FROM vllm/vllm-openai:v0.33.0\nCMD vllm serve T --speculative-config '{\"method\": \"dflash\"}'\n"
    _, cands = candidates("Dockerfile", text)
    [launch] = [x for c in cands if (x := find_launch(c)) is not None]
    versions = launch_versions(launch, {}, {"llama.cpp": "b11434"}, {"sglang": "0.5.22"})
    assert (versions["vllm"].used, versions["vllm"].origin) == ("0.33.0", "launch-file")
    assert versions["vllm"].detail == "image vllm/vllm-openai:v0.33.0 (line 1)"
    assert (versions["sglang"].used, versions["sglang"].origin) == ("0.5.22", "config")
    assert versions["llama.cpp"].origin == "option" and versions["transformers"].origin == "default"
    # --engine-version wins over the pin
    versions = launch_versions(launch, {}, {"vllm": "0.32.0"})
    assert (versions["vllm"].used, versions["vllm"].origin) == ("0.32.0", "option")


def test_text_output_fits_80_columns():
    from dflash_compat.cli.launch_render import command_lines

    out = run("--no-pair", "--fix", str(REPO / "tests/data/launch/shell/llama-q8-draft-cache.sh")).output
    assert all(len(line) <= 80 for line in out.splitlines() if " " in line.strip()), out
    lines = command_lines(["vllm", "serve", "m", "--tensor-parallel-size", "2", "--speculative-config", SPEC], 60)
    assert shlex.split(" ".join(line.rstrip("\\") for line in lines)) == [
        "vllm", "serve", "m", "--tensor-parallel-size", "2", "--speculative-config", SPEC]
    assert lines[1].startswith("    --tensor-parallel-size 2") or lines[0].endswith("2 \\")


def test_words_match_shlex_on_generated_lines():
    """Property: on lines made of words, spaces, quotes and backslashes (no expansions, separators or
    comments, which shlex does not know), the words are exactly shlex.split's, and a line shlex cannot
    split (an unbalanced quote, a trailing escape) is an error here too."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=400, deadline=None)
    @given(st.text(alphabet="ab-=:{}, '\"\\\\", max_size=30))
    def check(line):
        try:
            expected = shlex.split(line)
        except ValueError:
            expected = None
        try:
            cmds = split_commands(line, assign=False)
            got = [w.text for c in cmds for w in c.words]
        except ShellSyntaxError:
            got = None
        if expected is None or got is None:
            # shlex refuses a trailing lone backslash that POSIX shells keep as a literal; quotes must agree
            assert line.rstrip().endswith("\\") or expected == got, (line, expected, got)
        else:
            assert got == expected, line

    check()


def test_a_llamacpp_launch_checks_its_gguf_pair_at_the_flag(tmp_path, monkeypatch):
    """A llama-server launch names GGUF files: the pair is read (header only) and judged for llama.cpp, and a
    draft length past block_size - 1 (DF815) points at the launch's --spec-draft-n-max."""
    pytest.importorskip("gguf")
    from tests.gguf_models import draft_gguf, target_gguf

    target_gguf(tmp_path / "t.gguf")
    draft_gguf(tmp_path / "d.gguf", **{"dflash.block_size": 8})
    monkeypatch.chdir(tmp_path)
    line = "llama-server -m t.gguf -md d.gguf --spec-type draft-dflash --spec-draft-n-max 12"
    report = check_text("x.sh", line, LaunchSettings(deep=False)).launches[0].report
    assert not [f for f in report.findings if f.code == "DF910"], report.findings  # the pair was checked
    [f] = [f for f in report.findings if f.code == "DF815"]
    assert (f.locations[0].line, f.locations[0].column) == (1, line.index("12") + 1)
    fixed = check_text("x.sh", line.replace("12", "7"), LaunchSettings(deep=False)).launches[0].report
    assert not [f for f in fixed.findings if f.code in ("DF815", "DF910")]
