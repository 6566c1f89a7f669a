"""Candidate commands -> engine launches: which engine, the pair, every option the rules read, and
where each one is written in the user's file."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from dflash_compat.launch.shellwords import ASSIGNMENT, RESERVED, Word
from dflash_compat.launch.sources import Candidate

__all__ = ["Opt", "Launch", "find_launch", "image_engine", "image_version", "SETTING_FLAGS"]


@dataclass(frozen=True)
class Opt:
    flag: Word  # the flag as written (for `--x=y`, the whole word)
    name: str  # the flag's name (`--x`); vLLM's underscores read as dashes
    value: Optional[Word]  # None: a flag without a value


@dataclass
class Launch:
    file: str
    kind: str
    context: str
    engine: str  # vllm, sglang, llama.cpp, mlx, transformers
    words: list[Word]  # the engine's argv from its entry point on
    opts: list[Opt]
    positionals: list[Word]
    image: Optional[str] = None
    image_line: int = 0
    image_column: int = 0
    # normalised settings the rules read (None: not given) and the word each came from
    settings: dict[str, Any] = field(default_factory=dict)
    where: dict[str, Word] = field(default_factory=dict)
    # settings whose value comes from a variable the file does not define: setting -> (word, names)
    unresolved: dict[str, tuple[Word, tuple[str, ...]]] = field(default_factory=dict)
    spec_config: Optional[dict] = None  # vLLM --speculative-config, parsed
    spec_error: Optional[str] = None  # why it could not be parsed
    entry: str = ""  # the entry point as written, normalised: `vllm serve`, `sglang serve`, `python -m ...`

    @property
    def entry_flags(self) -> frozenset[str]:
        """Flags the entry point itself takes before the engine's parser sees the rest: `sglang serve`'s
        --model-type (sglang 0.5.23 sglang/cli/serve.py:30-59)."""
        return frozenset({"--model-type"}) if self.entry == "sglang serve" else frozenset()

    @property
    def line(self) -> int:
        return self.words[0].line

    @property
    def column(self) -> int:
        return self.words[0].column

    @property
    def speculative(self) -> bool:
        """Whether the launch asks for speculative decoding at all (a draft, a method, a speculative config):
        a plain launch of the target has no pair to judge."""
        s = self.settings
        return any(s.get(k) is not None or k in self.unresolved
                   for k in ("draft", "method", "algorithm", "spec_type", "num_speculative_tokens")) \
            or self.spec_config is not None or self.spec_error is not None

    @property
    def target(self) -> Optional[str]:
        return self.settings.get("target")

    @property
    def draft(self) -> Optional[str]:
        return self.settings.get("draft")


def _base(path: str) -> str:
    """The last part of a path (`/usr/bin/vllm` -> `vllm`): PurePath(path).name without its cost per word."""
    return path[path.rfind("/") + 1:]


# ---------------------------------------------------------------------------------------------- images

_IMAGES = (
    (re.compile(r"(^|/)vllm-openai(?=[:@]|$)"), "vllm"),
    (re.compile(r"(^|/)lmsysorg/sglang(?=[:@]|$)"), "sglang"),
    (re.compile(r"(^|/)(ggml-org|ggerganov)/llama\.cpp(?=[:@]|$)"), "llama.cpp"),
)


def image_engine(image: Optional[str]) -> Optional[str]:
    for pattern, engine in _IMAGES:
        if image and pattern.search(image):
            return engine
    return None


def image_version(image: Optional[str]) -> Optional[str]:
    """The engine version an image tag pins: vllm/vllm-openai:v0.33.0 -> 0.33.0, lmsysorg/sglang:v0.5.23-cu129
    -> 0.5.23, ghcr.io/ggml-org/llama.cpp:server-cuda-b11434 -> b11434; None for `latest` and the like."""
    engine = image_engine(image)
    if engine is None or ":" not in image.rsplit("/", 1)[-1]:
        return None
    tag = image.rsplit(":", 1)[1].split("@")[0]
    if engine == "llama.cpp":
        m = re.search(r"(?:^|-)b(\d+)(?:$|-)", tag)
        return f"b{m.group(1)}" if m else None
    m = re.match(r"v?(\d+\.\d+\.\d+(?:\.post\d+|rc\d+)?)", tag)
    return m.group(1) if m else None


# the images' entrypoints: what the arguments of a container without a command go to
_IMAGE_ENTRY = {"vllm": "vllm", "llama.cpp": "llama.cpp"}

# --------------------------------------------------------------------------------------------- engines

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_VLLM_MODULES = ("vllm.entrypoints.openai.api_server",)
_SGLANG_MODULES = ("sglang.launch_server",)


_CONTAINER_RUNNERS = {"docker", "podman", "nerdctl"}
_SHELLS = {"sh", "bash", "dash", "zsh", "ash", "ksh"}
# commands whose arguments may spell a launch without running one
_NOT_LAUNCHERS = {"echo", "printf", "grep", "egrep", "fgrep", "pgrep", "pkill", "kill", "killall", "cat", "pip", "pip3",
                  "which", "type", "command", "test", "[", "man", "tee", "sed", "awk", "git", "curl", "wget", "apt-get",
                  "apt", "brew", "true", ":", "#"}


def _entry(words: list[Word]) -> Optional[tuple[str, int]]:
    """(engine, index of the first argument) when these words launch an engine."""
    first = 0
    while first < len(words) and words[first].raw in RESERVED:  # `then`, `do`, `{`: the command comes after
        first += 1
    if first < len(words) and _base(words[first].text) in _NOT_LAUNCHERS:
        return None
    if first + 1 < len(words) and _base(words[first].text) in _SHELLS \
            and re.match(r"^-[a-z]*c[a-z]*$", words[first + 1].text):
        return None  # `sh -c SCRIPT ARGS...`: the launch is in SCRIPT (read on its own); ARGS are $0, $1...
    for i, w in enumerate(words):
        t, nxt = w.text, words[i + 1].text if i + 1 < len(words) else ""
        base = _base(t)
        if base == "vllm" and nxt == "serve":
            return "vllm", i + 2
        if t == "-m" and nxt in _VLLM_MODULES:
            return "vllm", i + 2
        if t == "-m" and nxt in _SGLANG_MODULES:
            return "sglang", i + 2
        if base == "sglang" and nxt == "serve":
            return "sglang", i + 2
        if base in ("llama-server", "llama-cli"):
            return "llama.cpp", i + 1
        if base == "dflash" and nxt == "generate" and i + 2 < len(words) \
                and words[i + 2].text in ("mlx", "transformers"):
            return words[i + 2].text, i + 3
    return None


# flags that take no value (so the next word is not theirs); everything else takes one when the next
# word does not start with `-`
_BOOL = {
    "--trust-remote-code", "--enable-dp-attention", "--enable-dp-lm-head", "--enforce-eager", "--enable-metrics",
    "--disable-log-requests", "--enable-prefix-caching", "--no-enable-prefix-caching", "--disable-radix-cache",
    "--enable-torch-compile", "--cont-batching", "--no-mmap", "--mlock", "--metrics", "--jinja", "--verbose",
    "--enable-chunked-prefill", "--headless", "--disable-cuda-graph", "--skip-server-warmup",
}
_NUM = re.compile(r"^-\d")

# engine -> canonical setting -> the flags that set it
SETTING_FLAGS: dict[str, dict[str, tuple[str, ...]]] = {
    "vllm": {
        "target": ("--model",),
        "spec": ("--speculative-config", "-sc"),
        "tp": ("--tensor-parallel-size", "-tp"),
        "pp": ("--pipeline-parallel-size", "-pp"),
        "dp": ("--data-parallel-size", "-dp"),
        "quantization": ("--quantization", "-q"),
        "kv_cache_dtype": ("--kv-cache-dtype",),
        "max_num_seqs": ("--max-num-seqs",),
        "max_num_batched_tokens": ("--max-num-batched-tokens",),
        "revision": ("--revision",),
    },
    "sglang": {
        "target": ("--model-path", "--model"),
        "algorithm": ("--speculative-algorithm",),
        "draft": ("--speculative-draft-model-path", "--speculative-draft-model"),
        "num_draft_tokens": ("--speculative-num-draft-tokens",),
        "dflash_block_size": ("--speculative-dflash-block-size",),
        "draft_window_size": ("--speculative-draft-window-size",),
        "tp": ("--tp-size", "--tensor-parallel-size", "--tp"),
        "pp": ("--pp-size", "--pipeline-parallel-size"),
        "dp": ("--dp-size", "--data-parallel-size", "--dp"),
        "attn_dp_size": ("--attn-dp-size",),
        "enable_dp_attention": ("--enable-dp-attention",),
        "enable_dp_lm_head": ("--enable-dp-lm-head",),
        "quantization": ("--quantization",),
        "draft_quantization": ("--speculative-draft-model-quantization",),
        "draft_attention_backend": ("--speculative-draft-attention-backend",),
        "attn_cp_size": ("--attn-cp-size",),
        "kv_cache_dtype": ("--kv-cache-dtype",),
        "draft_kv_cache_dtype": ("--speculative-draft-kv-cache-dtype",),
        "max_num_seqs": ("--max-running-requests",),
        "revision": ("--revision",),
        "draft_revision": ("--speculative-draft-model-revision",),
    },
    "llama.cpp": {
        "target": ("-m", "--model"),
        "target_hf": ("-hf", "-hfr", "--hf-repo"),
        "draft": ("-md", "--model-draft", "--spec-draft-model"),
        "draft_hf": ("-hfd", "-hfrd", "--hf-repo-draft"),
        "spec_type": ("--spec-type",),
        "kv_cache_type_k": ("-ctk", "--cache-type-k"),
        "kv_cache_type_v": ("-ctv", "--cache-type-v"),
        "draft_kv_cache_type_k": ("-ctkd", "--spec-draft-type-k", "--cache-type-k-draft"),
        "draft_kv_cache_type_v": ("-ctvd", "--spec-draft-type-v", "--cache-type-v-draft"),
        "split_mode": ("-sm", "--split-mode"),
        "n_max": ("--spec-draft-n-max",),
        "p_min": ("--spec-draft-p-min", "--draft-p-min"),
        "parallel": ("-np", "--parallel"),
    },
    "mlx": {"target": ("--model",), "draft": ("--draft",), "block_size": ("--block-size",)},
    "transformers": {"target": ("--model",), "draft": ("--draft",), "block_size": ("--block-size",)},
}
_INT_SETTINGS = {"tp", "pp", "dp", "max_num_seqs", "max_num_batched_tokens", "num_draft_tokens", "dflash_block_size",
                 "draft_window_size", "attn_dp_size", "attn_cp_size", "n_max", "parallel", "block_size"}
_FLOAT_SETTINGS = {"p_min"}
_BOOL_SETTINGS = {"enable_dp_attention", "enable_dp_lm_head"}
# vLLM --speculative-config keys -> settings
_SPEC_KEYS = {"model": "draft", "method": "method", "num_speculative_tokens": "num_speculative_tokens",
              "draft_tensor_parallel_size": "draft_tp", "quantization": "draft_quantization",
              "kv_cache_dtype": "draft_kv_cache_dtype", "revision": "draft_revision"}


def _options(engine: str, words: list[Word]) -> tuple[list[Opt], list[Word]]:
    opts, positionals = [], []
    i = 0
    while i < len(words):
        w = words[i]
        t = w.text
        if t.startswith("-") and not _NUM.match(t) and t != "-":
            name, eq, value = t.partition("=")
            if engine == "vllm" and name.startswith("--"):
                name = "--" + name[2:].replace("_", "-")
            if eq:
                val = Word(value, w.line, w.column + len(t) - len(value), value, w.unresolved)
                opts.append(Opt(w, name, val))
            elif name in _BOOL or i + 1 >= len(words) or (words[i + 1].text.startswith("-")
                                                          and not _NUM.match(words[i + 1].text)):
                opts.append(Opt(w, name, None))
            else:
                opts.append(Opt(w, name, words[i + 1]))
                i += 1
        elif not opts and ASSIGNMENT.match(t):
            pass
        else:
            positionals.append(w)
        i += 1
    return opts, positionals


def _coerce(setting: str, text: str) -> Any:
    try:
        if setting in _INT_SETTINGS:
            return int(text)
        if setting in _FLOAT_SETTINGS:
            return float(text)
    except ValueError:
        return text
    return text


def find_launch(c: Candidate) -> Optional[Launch]:
    """The engine launch in this command, if there is one: an entry point in its words, or the arguments
    of a container whose image's entrypoint is an engine (`vllm/vllm-openai` with only `args:`)."""
    image, image_line, image_column, args_only = c.image, c.image_line, c.image_column, c.args_only
    if image is None and c.words and _base(c.words[0].text) in _CONTAINER_RUNNERS:
        # `docker run [options] IMAGE [args]`: the image's entrypoint gets the words after it
        at = next((i for i, w in enumerate(c.words) if image_engine(w.text)), None)
        if at is not None:
            image, image_line, image_column = c.words[at].text, c.words[at].line, c.words[at].column
            if _entry(c.words[at + 1:]) is None:
                c = Candidate(c.file, c.kind, c.words[at + 1:], image=image, image_line=image_line, args_only=True,
                              context=c.context, image_column=image_column)
                args_only = True
    found = _entry(c.words)
    if found is None:
        eng = image_engine(image)
        if not (args_only and eng in _IMAGE_ENTRY and c.words):
            return None
        engine, start, entry_i = _IMAGE_ENTRY[eng], 0, 0
    else:
        engine, start = found
        # the launch's position: its entry word (`vllm`, `python`, `llama-server`, `dflash`)
        entry_i = next((i for i in range(start - 1, -1, -1)
                        if _base(c.words[i].text) in ("vllm", "sglang", "llama-server", "llama-cli", "dflash")
                        or _PYTHON.match(_base(c.words[i].text))), start - 1)
    opts, positionals = _options(engine, c.words[start:])
    launch = Launch(c.file, c.kind, c.context, engine, c.words[entry_i:], opts, positionals, image=image,
                    image_line=image_line, image_column=image_column,
                    entry=" ".join(_base(w.text) if k == 0 else w.text
                                   for k, w in enumerate(c.words[entry_i:start])))
    _settings(launch)
    return launch


def _settings(launch: Launch) -> None:
    table = SETTING_FLAGS[launch.engine]
    flag_to_setting = {flag: s for s, flags in table.items() for flag in flags}
    for opt in launch.opts:
        setting = flag_to_setting.get(opt.name)
        if setting is None:
            continue
        if setting in _BOOL_SETTINGS:
            launch.settings[setting] = True
            launch.where[setting] = opt.flag
            continue
        if opt.value is None:
            continue
        _put(launch, setting, opt.value.text, opt.value)
    if launch.engine == "sglang" and "target" not in launch.settings and launch.positionals \
            and launch.entry == "sglang serve":
        # `sglang serve MODEL`: a first argument that is no flag is the model path (sglang 0.5.23
        # sglang/cli/serve.py:62-66)
        _put(launch, "target", launch.positionals[0].text, launch.positionals[0])
    if launch.engine == "vllm":
        if "target" not in launch.settings and launch.positionals:
            _put(launch, "target", launch.positionals[0].text, launch.positionals[0])
        spec = launch.settings.pop("spec", None)
        dotted = {o.name.split(".", 1)[1].replace("-", "_"): o for o in launch.opts
                  if o.name.startswith("--speculative-config.") and o.value is not None}
        if spec is None and dotted:  # `--speculative-config.method dflash ...`: one key per flag
            launch.spec_config = {}
            for key, opt in dotted.items():
                value = _coerce("n_max", opt.value.text) if key.endswith(("tokens", "size")) else opt.value.text
                launch.spec_config[key] = value
                if key in _SPEC_KEYS:
                    _put(launch, _SPEC_KEYS[key], opt.value.text, opt.value)
                    if isinstance(value, int):
                        launch.settings[_SPEC_KEYS[key]] = value
        if spec is not None and "spec" not in launch.unresolved:
            word = launch.where["spec"]
            try:
                parsed = json.loads(spec)
            except json.JSONDecodeError as e:
                launch.spec_error = f"not JSON ({e.msg} at character {e.pos})"
                return
            if not isinstance(parsed, dict):
                launch.spec_error = "not a JSON object"
                return
            launch.spec_config = parsed
            for key, setting in _SPEC_KEYS.items():
                if key in parsed:
                    value = parsed[key]
                    launch.settings[setting] = value
                    launch.where[setting] = word
                    if isinstance(value, str) and "$" in value and word.unresolved:
                        launch.unresolved[setting] = (word, word.unresolved)
    if launch.engine == "llama.cpp":
        for ref, hf in (("target", "target_hf"), ("draft", "draft_hf")):
            if ref not in launch.settings and hf in launch.settings:
                launch.settings[ref] = launch.settings[hf]
                launch.where[ref] = launch.where[hf]
    if launch.engine in ("mlx", "transformers") and "block_size" in launch.settings:
        launch.settings["num_speculative_tokens"] = None


def _put(launch: Launch, setting: str, text: str, word: Word) -> None:
    launch.where[setting] = word
    if word.unresolved and "$" in text or (word.unresolved and "`" in text):
        launch.unresolved[setting] = (word, word.unresolved)
        launch.settings[setting] = None if setting in _INT_SETTINGS | _FLOAT_SETTINGS else text
        return
    launch.settings[setting] = _coerce(setting, text)
