"""DF611: DFlash 2's selector codebooks are stored under a name an engine does not load."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.rules.weights._draft_tensors import has_selector, weight_shapes
from dflash_compat.specs.tensor_names import CODEBOOKS

# What each engine does with `candidate_selector.<book>.weight` (every engine loads the bare name).
ENGINES = (
    ("vllm", "vLLM stops at load (\"Attempted to load nested weight ... into a single parameter\")", "error"),
    ("mlx", "the dflash MLX loader stops with KeyError('candidate_selector.predecessor_codebook')", "error"),
    ("sglang", "SGLang skips the unknown names and drafts with all-zero codebooks (no error)", "error"),
)


def check(ctx: RuleContext):
    d = ctx.draft
    if not has_selector(d):
        return
    pre, shapes, _ = weight_shapes(ctx.headers)
    dotted = [f"{b}.weight" for b in CODEBOOKS if f"{b}.weight" in shapes]
    if not dotted:
        return
    locs = [ctx.tensor_loc(pre + n, ctx.headers.tensor_files.get(pre + n, "model.safetensors")) for n in dotted]
    for backend, what, severity in ENGINES:
        yield Violation(
            f"the draft stores the selector codebooks as {', '.join(dotted)}; every engine loads them as bare "
            f"parameters ({', '.join(CODEBOOKS)}): {what}",
            locs, severity=severity, backends=(backend,),
        )


RULE = Rule(
    code="DF611",
    name="draft-codebook-spelling",
    severity="error",
    backends=("vllm", "sglang", "mlx"),
    needs=("weights",),
    check=check,
    what="A DFlash 2 draft stores its candidate-selector codebooks under the names the engines load: "
    "`candidate_selector.predecessor_codebook` and `candidate_selector.successor_codebook`, without a "
    "`.weight` suffix.",
    why="The codebooks are bare parameters in vLLM, SGLang and speculators, and the dflash loaders map the "
    "bare name onto their own modules. A checkpoint that spells them `...codebook.weight` (what a "
    "module's state dict gives when the codebooks are nn.Embedding, as in earlier dflash-compat "
    "`init-draft --version v2` and `convert` output) is refused by vLLM at load and by the dflash MLX "
    "loader, and is silently skipped by SGLang, which then scores candidates with zero codebooks; "
    "speculators 0.9.0 leaves both codebooks at their random initialisation. The dflash transformers reference "
    "loads either spelling into the same weights (run with transformers 5.25.0), so that backend is not "
    "named.",
    example="draft weights with candidate_selector.predecessor_codebook.weight [151936, 256]",
    fix="Rename the two tensors without the `.weight` suffix: `dflash-check convert DRAFT --to zlab -o OUT` "
    "writes them so; `init-draft` and `convert` from this release write the bare names.",
    sources=(
        EngineSource("vllm", "vllm/model_executor/models/qwen3_dflash2.py", "326-331", "codebooks: bare parameters"),
        EngineSource("vllm", "vllm/model_executor/models/utils.py", "313-322",
                     "a nested name into a single parameter: ValueError"),
        EngineSource("sglang", "sglang/srt/models/dflash.py", "1166-1171", "codebooks: bare parameters, zeros"),
        EngineSource("sglang", "sglang/srt/models/dflash.py", "943-945", "unexpected weights ignored"),
        EngineSource("dflash", "dflash/model_mlx.py", "478-481", "MLX: pops the bare key (KeyError otherwise)"),
        EngineSource("dflash", "dflash/model.py", "631-637", "transformers: bare key mapped onto the embedding"),
        EngineSource("speculators", "speculators/models/dflash2/model_definitions.py", "261-265",
                     "codebooks: bare parameters, randomly initialised"),
    ),
)
