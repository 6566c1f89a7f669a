"""Launch commands for a DFlash pair on each engine, derived from the draft's config, and their argv
parsed back into checker options (so the rules judge exactly what is printed).

Every flag name below was read from the engine's own argument parser (cited per engine; versions in
`contract.ENGINE_VERSIONS`). Pure standard library.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

from dflash_compat.deployment.options import OPTION_FLAGS
from dflash_compat.exceptions import InputError

__all__ = ["ENGINES", "OPTION_FLAGS", "LaunchRequest", "LaunchPlan", "build_plan", "for_release", "options_from_argv",
           "shell_command", "DEFAULT_PROMPT", "DEFAULT_BLOCK_SIZE"]

ENGINES = ("vllm", "sglang", "mlx", "transformers", "llama.cpp")
# The reference's default when a draft states no block_size (dflash/model.py; our DF115 says so too).
DEFAULT_BLOCK_SIZE = 16
DEFAULT_PROMPT = "Write a short story about a robot who learns to paint."
# vLLM's max_num_seqs default for its API server on GPUs below 70 GiB (vllm/engine/arg_utils.py:2999-3006);
# the larger tiers default to 1024. serve states a value so the command does not depend on the GPU.
VLLM_DEFAULT_MAX_NUM_SEQS = 256
# vLLM's smallest API-server token budget on a GPU (vllm/engine/arg_utils.py:2999-3001): prefill chunks
# below it get slow, so a derived budget never goes under it.
VLLM_MIN_BATCHED_TOKENS = 2048
# SGLang sets max_running_requests to 48 for DFLASH unless given (sglang srt/arg_groups/speculative_hook.py:437-445).
SGLANG_DFLASH_DEFAULT_RUNNING = 48
# llama.cpp b11434: the flags `serve --engine llama.cpp` prints, each read from common/arg.cpp (cited by
# the bundled facts: data/llamacpp/b11434.json, flag_*), and the converter's entry point.
LLAMA_SERVER = "llama-server"
LLAMA_CONVERT = "convert_hf_to_gguf.py"


@dataclass(frozen=True)
class LaunchRequest:
    """What the user asked for (None: derive it). Model refs are as given (folder or org/name[@rev])."""

    engine: str
    target: str
    draft: str
    revision: Optional[str] = None
    draft_revision: Optional[str] = None
    num_speculative_tokens: Optional[int] = None
    num_draft_tokens: Optional[int] = None
    tp: int = 1
    draft_tp: Optional[int] = None
    max_num_seqs: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None
    attn_dp_size: Optional[int] = None
    enable_dp_lm_head: bool = False
    pp_size: Optional[int] = None
    dflash_block_size: Optional[int] = None
    draft_window_size: Optional[int] = None
    quantization: Optional[str] = None
    draft_quantization: Optional[str] = None
    served_model_name: Optional[str] = None
    port: Optional[int] = None
    trust_remote_code: bool = False
    prompt: str = DEFAULT_PROMPT
    spec_draft_n_max: Optional[int] = None  # llama.cpp --spec-draft-n-max
    profile: Optional[dict[str, Any]] = None  # an acceptance profile (serving/profile.py): K from it


@dataclass
class LaunchPlan:
    engine: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    block_size: int = DEFAULT_BLOCK_SIZE
    # commands to run first (llama.cpp: convert a checkpoint pair to GGUF), each an argv
    prepare: list[list[str]] = field(default_factory=list)


def _split(ref: str, revision: Optional[str]) -> tuple[str, Optional[str]]:
    """`org/name@rev` -> (org/name, rev); an explicit --revision wins; local paths stay whole."""
    from dflash_compat.resolve.refs import _split_revision

    name, rev = _split_revision(ref)
    return name, revision or rev


def _refuse(req: LaunchRequest, allowed: set[str]) -> None:
    """Options that mean nothing on this engine are input errors, not silently dropped flags."""
    given = {
        "--num-speculative-tokens": req.num_speculative_tokens, "--num-draft-tokens": req.num_draft_tokens,
        "--draft-tp": req.draft_tp, "--max-num-seqs": req.max_num_seqs,
        "--max-num-batched-tokens": req.max_num_batched_tokens, "--attn-dp-size": req.attn_dp_size,
        "--enable-dp-lm-head": req.enable_dp_lm_head or None, "--pp-size": req.pp_size,
        "--dflash-block-size": req.dflash_block_size, "--draft-window-size": req.draft_window_size,
        "--tp": req.tp if req.tp != 1 else None, "--port": req.port, "--served-model-name": req.served_model_name,
        "--quantization": req.quantization, "--draft-quantization": req.draft_quantization,
        "--spec-draft-n-max": req.spec_draft_n_max, "--profile": req.profile,
    }
    bad = [flag for flag, value in given.items() if value is not None and flag not in allowed]
    if bad:
        raise InputError(f"{', '.join(bad)}: not an option of `serve --engine {req.engine}`")


def build_plan(req: LaunchRequest, draft: dict[str, Any]) -> LaunchPlan:
    """The launch command for `req.engine`, from the draft's config facts (a DraftSpec dump)."""
    block = draft.get("block_size")
    bs = block if isinstance(block, int) and block >= 1 else DEFAULT_BLOCK_SIZE
    builder = {"vllm": _vllm, "sglang": _sglang, "mlx": _dflash_cli, "transformers": _dflash_cli,
               "llama.cpp": _llamacpp}[req.engine]
    plan = builder(req, bs)
    plan.block_size = bs
    if not isinstance(block, int):
        plan.notes.append(f"the draft states no block_size: the default {DEFAULT_BLOCK_SIZE} is assumed")
    return plan


def _vllm(req: LaunchRequest, bs: int) -> LaunchPlan:
    """`vllm serve` (usage: vllm/entrypoints/cli/serve.py:169) with --speculative-config as JSON
    (vllm/engine/arg_utils.py:1860-1867; keys: vllm/config/speculative.py:413-455)."""
    _refuse(req, {"--num-speculative-tokens", "--draft-tp", "--max-num-seqs", "--max-num-batched-tokens", "--tp",
                  "--port", "--served-model-name"})
    target, rev = _split(req.target, req.revision)
    draft, draft_rev = _split(req.draft, req.draft_revision)
    k = req.num_speculative_tokens or max(bs - 1, 1)  # required for DFlash: config/speculative.py:1614-1618
    spec: dict[str, Any] = {"method": "dflash", "model": draft, "num_speculative_tokens": k}
    if req.draft_tp is not None:
        spec["draft_tensor_parallel_size"] = req.draft_tp
    if draft_rev:
        spec["revision"] = draft_rev
    seqs = req.max_num_seqs
    budget = req.max_num_batched_tokens
    notes = []
    if seqs is None:
        # vLLM caps concurrency at budget // (K+1) (config/vllm.py:2380-2395): derive the one from the other
        seqs = max(budget // (k + 1), 1) if budget is not None else VLLM_DEFAULT_MAX_NUM_SEQS
    if budget is None:
        budget = max(seqs * (k + 1), VLLM_MIN_BATCHED_TOKENS)
        notes.append(f"--max-num-batched-tokens {budget} lets all {seqs} sequences verify K+1 = {k + 1} "
                     "tokens in one step (vLLM caps concurrency at max_num_batched_tokens // (K+1))")
    argv = ["vllm", "serve", target, *speculative_config_args(spec),
            "--tensor-parallel-size", str(req.tp), "--max-num-seqs", str(seqs), "--max-num-batched-tokens", str(budget)]
    argv += _common_tail(rev, req, "--revision")
    if req.num_speculative_tokens is None:
        notes.append(f"K = num_speculative_tokens = {k} (block_size {bs} - 1: the anchor is not drafted)")
    else:
        notes.append(f"K = num_speculative_tokens = {k} as given (block_size {bs} - 1 = {max(bs - 1, 1)})")
    return LaunchPlan("vllm", argv, notes=notes)


def _dotted_value(value: Any) -> Optional[str]:
    """`value` as vLLM's dotted form reads it back (json.loads, else the raw string:
    vllm/utils/argparse_utils.py:476-485), or None where that would change it (a name such as `1e5`
    or `null` that json.loads turns into something else)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    if isinstance(value, int):
        return str(value)
    try:
        json.loads(value)
    except ValueError:
        return value
    return None


def speculative_config_args(spec: dict[str, Any]) -> list[str]:
    """vLLM's --speculative-config in its dotted form, one short flag per key (`--speculative-config.model
    D`, vllm/utils/argparse_utils.py:159-163,462-500: merged back into the same JSON), so that the printed
    command wraps at 80 columns; the one JSON argument when a value would not read back unchanged."""
    parts = [(key, _dotted_value(value)) for key, value in spec.items()]
    if any(text is None for _, text in parts):
        return ["--speculative-config", json.dumps(spec)]
    return [arg for key, text in parts for arg in (f"--speculative-config.{key}", text)]


def _sglang(req: LaunchRequest, bs: int) -> LaunchPlan:
    """`python -m sglang.launch_server` (sglang/launch_server.py). Flags are the ServerArgs field names
    with `-` (srt/arg_groups/arg_utils.py:288-290): spec fields srt/arg_groups/fields/spec.py:31-70,165;
    parallel fields srt/arg_groups/fields/parallel.py:45-81,199; --enable-metrics observability.py:70."""
    _refuse(req, {"--num-draft-tokens", "--max-num-seqs", "--tp", "--attn-dp-size", "--enable-dp-lm-head",
                  "--pp-size", "--dflash-block-size", "--draft-window-size", "--port", "--served-model-name",
                  "--quantization", "--draft-quantization"})
    target, rev = _split(req.target, req.revision)
    draft, draft_rev = _split(req.draft, req.draft_revision)
    n = req.num_draft_tokens or req.dflash_block_size or bs  # counts the anchor: = block_size
    argv = ["python", "-m", "sglang.launch_server", "--model-path", target, "--speculative-algorithm", "DFLASH",
            "--speculative-draft-model-path", draft, "--speculative-num-draft-tokens", str(n), "--tp-size", str(req.tp)]
    notes = [f"--speculative-num-draft-tokens {n} = block_size (SGLang counts the anchor token)"]
    if req.dflash_block_size is not None:
        argv += ["--speculative-dflash-block-size", str(req.dflash_block_size)]
    if req.draft_window_size is not None:
        argv += ["--speculative-draft-window-size", str(req.draft_window_size)]
    if req.attn_dp_size is not None:
        argv += ["--attn-dp-size", str(req.attn_dp_size)]
    if req.enable_dp_lm_head:
        argv.append("--enable-dp-lm-head")
    if req.pp_size is not None:
        argv += ["--pp-size", str(req.pp_size)]
    if req.quantization is not None:  # the draft follows it unless told otherwise (srt/arg_groups/fields/model.py:177)
        argv += ["--quantization", req.quantization]
    if req.draft_quantization is not None:  # srt/arg_groups/fields/spec.py:216
        argv += ["--speculative-draft-model-quantization", req.draft_quantization]
    if req.max_num_seqs is not None:
        argv += ["--max-running-requests", str(req.max_num_seqs)]
    else:
        notes.append(f"SGLang limits DFLASH to {SGLANG_DFLASH_DEFAULT_RUNNING} running requests unless "
                     "--max-running-requests is given (pass --max-num-seqs to set it)")
    if draft_rev:
        argv += ["--speculative-draft-model-revision", draft_rev]
    argv += _common_tail(rev, req, "--revision")
    argv.append("--enable-metrics")  # the Prometheus counters `dflash-check probe` reads
    return LaunchPlan("sglang", argv, notes=notes)


def _common_tail(rev: Optional[str], req: LaunchRequest, revision_flag: str) -> list[str]:
    out: list[str] = []
    if rev:
        out += [revision_flag, rev]
    if req.trust_remote_code:
        out.append("--trust-remote-code")
    if req.served_model_name:
        out += ["--served-model-name", req.served_model_name]
    if req.port is not None:
        out += ["--port", str(req.port)]
    return out


RUNNER_MODULE = "dflash_compat.serve.dflash_run"
RUNNER_ARGV = ["python", "-m", RUNNER_MODULE]
RUNNER_MAX_NEW_TOKENS = 128


def _dflash_cli(req: LaunchRequest, bs: int) -> LaunchPlan:
    """A one-shot generation with the dflash reference's own model code, through our runner
    (`dflash_compat/serve/dflash_run.py`): dflash 0.1.0's console script cannot run a local pair
    without CUDA (cuda:0 at dflash/cli.py:63; Hub-only draft loading at dflash/model_mlx.py:431; a
    chat template required at dflash/benchmark.py:63-71; `requests` imported at dflash/benchmark.py:11).
    Neither engine has a server that serves a DFlash draft: mlx_lm 0.32.2's server loads a draft as an
    ordinary mlx_lm model (mlx_lm/server.py:449-452), which a DFlash draft's weights do not fit
    (mlx_lm/utils.py:599 raises); transformers' `generate(speculation_type="dflash")` drafts only with
    its own MuseGlimmerAssistant classes (transformers/generation/utils.py:1361-1368)."""
    _refuse(req, set())
    if _split(req.target, req.revision)[1] or _split(req.draft, req.draft_revision)[1]:
        raise InputError("the dflash runner takes no revision: download it and pass its folder")
    argv = [*RUNNER_ARGV, req.engine, "--model", req.target, "--draft", req.draft, "--block-size", str(bs),
            "--max-new-tokens", str(RUNNER_MAX_NEW_TOKENS)]
    if req.trust_remote_code and req.engine == "transformers":
        argv.append("--trust-remote-code")
    argv += ["--", req.prompt]  # `--`: a prompt that starts with - is still the prompt
    notes = [f"--block-size {bs} = the draft's block_size (the anchor included)",
             "one response from dflash 0.1.0's own model code; needs `pip install --no-deps "
             f"dflash==0.1.0` and dflash-compat[{'mlx' if req.engine == 'mlx' else 'torch'}] (docs/serving.md)"]
    if req.engine == "transformers":
        notes.append("runs on cuda:0 in bfloat16 when there is a GPU, else on the CPU in float32")
    return LaunchPlan(req.engine, argv, notes=notes)


def _gguf_name(ref: str) -> str:
    """A GGUF file name for a checkpoint ref: its last path part, made of safe characters only."""
    import re

    base = ref.rstrip("/").rsplit("/", 1)[-1] or "model"
    return re.sub(r"[^A-Za-z0-9._-]", "_", base)[:80].lstrip(".-") + ".gguf"


def _llamacpp(req: LaunchRequest, bs: int) -> LaunchPlan:
    """`llama-server -m TARGET.gguf -md DRAFT.gguf --spec-type draft-dflash --spec-draft-n-max N` (llama.cpp
    b11434 common/arg.cpp: --spec-draft-n-max :4150, -md :4266, --spec-type :4274, --metrics :3602;
    draft-dflash common/speculative.cpp:77). A checkpoint pair is converted first with llama.cpp's own
    convert_hf_to_gguf.py (the draft with --target-model-dir, conversion/qwen.py)."""
    _refuse(req, {"--spec-draft-n-max", "--profile", "--port"})
    if _split(req.target, req.revision)[1] or _split(req.draft, req.draft_revision)[1]:
        raise InputError("llama.cpp reads local GGUF files: download that revision (hf download REPO --revision REV "
                         "--local-dir DIR) and pass DIR")
    notes: list[str] = []
    prepare: list[list[str]] = []
    files = {}
    for role, ref in (("target", req.target), ("draft", req.draft)):
        if ref.lower().endswith(".gguf"):
            files[role] = ref
            continue
        local = ref
        if not (ref.startswith((".", "/", "~")) or "/" not in ref or ref.count("/") > 1):
            from dflash_compat.resolve.refs import local_path

            if local_path(ref) is None:  # a Hub repo: the converter reads a local folder
                local = _gguf_name(ref)[:-5]
                prepare.append(["hf", "download", ref, "--local-dir", local])
        files[role] = _gguf_name(ref)
        if role == "draft" and files[role] == files.get("target"):
            files[role] = files[role][:-5] + "-draft.gguf"
        files[role + "_dir"] = local
    if "target_dir" in files:
        prepare.append(["python", LLAMA_CONVERT, files["target_dir"], "--outfile", files["target"], "--outtype",
                        "bf16"])
    if "draft_dir" in files:
        target_dir = files.get("target_dir")
        if target_dir is None:
            raise InputError("converting a DFlash draft needs the target's checkpoint folder (the converter's "
                             "--target-model-dir): pass the target as a folder or Hub repo, not a .gguf file")
        prepare.append(["python", LLAMA_CONVERT, files["draft_dir"], "--target-model-dir", target_dir, "--outfile",
                        files["draft"], "--outtype", "bf16"])
        notes.append("the converter writes dflash.target_layers = target_layer_ids + 1 (llama.cpp captures layer "
                     "inputs) and takes the draft's vocabulary from --target-model-dir")
    limit = max(bs - 1, 1)
    if req.spec_draft_n_max is not None:
        n = req.spec_draft_n_max
    elif req.profile is not None:
        from dflash_compat.liveprobe.profile import DEFAULT_COST, recommend_k

        n = recommend_k(req.profile["per_position_acceptance"], req.profile.get("cost") or DEFAULT_COST) or 1
        n = min(n, limit)
        notes.append(f"--spec-draft-n-max {n}: the best K of the acceptance profile (`dflash-check recommend`)")
    else:
        n = limit
    if req.spec_draft_n_max is None and req.profile is None:
        notes.append(f"--spec-draft-n-max {n} = block_size - 1 (llama.cpp drafts the anchor plus N mask tokens; "
                     "its default is 3)")
    argv = [LLAMA_SERVER, "-m", files["target"], "-md", files["draft"], "--spec-type", "draft-dflash",
            "--spec-draft-n-max", str(n), "--metrics"]
    if req.port is not None:
        argv += ["--port", str(req.port)]
    notes.append("keep the draft's KV cache unquantised (no -ctkd/-ctvd q8_0): users report acceptance "
                 "collapsing with a quantised draft cache (llama.cpp issue #25725)")
    return LaunchPlan("llama.cpp", argv, notes=notes, prepare=prepare)


def shell_command(plan: LaunchPlan, width: int = 80, argv: Optional[list[str]] = None) -> str:
    """The argv as one shell command, every argument quoted by shlex (a hostile path stays one
    argument), broken with backslash-newlines before each flag when it would pass `width`, and before
    any other argument that would take a line past `width`."""
    from dflash_compat.emitters._safe import shell_quote

    # shell_quote: shlex, or $'...' showing control / bidi characters as escapes (never raw in a script)
    env = [f"{shell_quote(k)}={shell_quote(v)}" for k, v in sorted(plan.env.items())] if argv is None else []
    argv = plan.argv if argv is None else argv
    words = env + [shell_quote(a) for a in argv]
    line = " ".join(words)
    if len(line) <= width:
        return line
    lines, current = [], ""
    for word, raw in zip(words, [None] * len(env) + argv):
        overflow = raw is not None and current.strip() and len(current) + 1 + len(word) + 2 > width
        if current and raw is not None and (raw.startswith("--") or overflow):
            lines.append(current)
            current = "    " + word
        else:
            current = f"{current} {word}" if current else word
    lines.append(current)
    return " \\\n".join(lines)


# ---------------------------------------------------------------------------------------------
# argv -> checker options (the round trip), read by the same parser as a launch file's line
# ---------------------------------------------------------------------------------------------


def options_from_argv(engine: str, argv: list[str]) -> dict[str, Any]:
    """Read a printed launch command back into the checker's options (what the rules will judge): the
    CheckOptions fields it sets, read by the parser `launch` reads a launch file's line with
    (`deployment.commands`), so `serve`'s command and the same line in a launch file are one deployment."""
    if engine in ("mlx", "transformers"):
        if argv[:4] != [*RUNNER_ARGV, engine]:
            raise InputError(f"a {engine} command starts with `python -m {RUNNER_MODULE} {engine}`")
        return {}
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}")
    from dataclasses import fields

    from dflash_compat.deployment.commands import options_of, parse_command
    from dflash_compat.deployment.options import CheckOptions

    launch = parse_command(argv, "cannot read the launch command back:")
    if launch.engine != engine:
        raise InputError(f"cannot read the launch command back: it launches {launch.engine}, not {engine}")
    method = launch.settings.get("method") if engine == "vllm" else launch.settings.get("algorithm")
    if engine == "vllm" and (method != "dflash" or not launch.settings.get("draft")):
        raise InputError("--speculative-config must name method dflash and a draft model")
    if engine == "sglang" and method != "DFLASH":
        raise InputError("--speculative-algorithm must be DFLASH")
    if engine == "llama.cpp" and launch.settings.get("spec_type") != "draft-dflash":
        raise InputError("--spec-type must be draft-dflash")
    options, default = options_of(launch), CheckOptions()
    return {f.name: getattr(options, f.name) for f in fields(CheckOptions)
            if f.name not in ("engine", "complete") and getattr(options, f.name) != getattr(default, f.name)}


def for_release(plan: LaunchPlan, accepted: Optional[frozenset], release: str) -> LaunchPlan:
    """The plan in the flags one engine release accepts (`accepted`: its launch flags, from the engine
    facts; None: not known for this engine, left as is). SGLang before `--attn-dp-size` existed (0.5.21)
    spells attention data parallelism `--dp-size N --enable-dp-attention`. A flag the release has no
    spelling for is an InputError: the command would not start."""
    if accepted is None:
        return plan
    argv, notes = list(plan.argv), list(plan.notes)
    if plan.engine == "sglang" and "--attn-dp-size" in argv and "--attn-dp-size" not in accepted \
            and {"--dp-size", "--enable-dp-attention"} <= accepted:
        i = argv.index("--attn-dp-size")
        argv[i:i + 2] = ["--dp-size", argv[i + 1], "--enable-dp-attention"]
        notes.append(f"SGLang {release} spells attention data parallelism --dp-size N --enable-dp-attention")
    unknown = [a for a in argv if a.startswith("--") and a.split("=", 1)[0] not in accepted]
    if unknown:
        names = {"sglang": "SGLang", "vllm": "vLLM"}.get(plan.engine, plan.engine)
        raise InputError(f"{names} {release} does not accept {', '.join(unknown)} (its launch flags, read from its "
                         f"code); choose another release with --engine-version, or drop the option that sets it")
    return LaunchPlan(plan.engine, argv, dict(plan.env), notes, plan.block_size, [list(p) for p in plan.prepare])
