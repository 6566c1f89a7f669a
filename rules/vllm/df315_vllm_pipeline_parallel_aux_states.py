"""DF315: vLLM at pipeline parallelism > 1 with a target that cannot relay aux hidden states across stages."""

from __future__ import annotations

from dflash_compat.checker import EngineSource, Rule, RuleContext, Violation
from dflash_compat.quoting import quote


def check(ctx: RuleContext):
    pp = ctx.options.pp_size
    if pp <= 1:
        return
    flags = ctx.engine("vllm").facts["aux_over_pp"]  # at the selected vLLM release
    arch = next((a for a in ctx.target.architectures if a in flags), None)
    if arch is None or flags[arch]:
        return
    yield Violation(
        f"--pp-size {pp}: vLLM's {quote(arch)} does not mark its decoder supports_aux_hidden_states_over_pp, and "
        f"the V2 model runner stops at start-up (\"{arch} does not support dflash with pipeline parallelism\")",
        [ctx.tloc("architectures", "architectures")],
    )


RULE = Rule(
    code="DF315",
    name="vllm-pipeline-parallel-aux-states",
    severity="error",
    backends=("vllm",),
    check=check,
    reads=("pp",),
    what="With pipeline parallelism (`--pp-size` > 1), the target's vLLM class relays the auxiliary hidden "
    "states between pipeline stages (its decoder sets `supports_aux_hidden_states_over_pp`). The list is data "
    "(`aux_over_pp` in dflash_compat/engines/data/engine_support.json), read from each class's language-model body.",
    why="DFlash takes its context features from intermediate target layers, which at pipeline parallelism "
    "live on earlier stages. vLLM's V2 model runner (the one that serves DFlash) checks the target's inner "
    "decoder for `supports_aux_hidden_states_over_pp` and refuses to start without it. In vLLM 0.33.0 only a "
    "few decoders set it (Llama, Qwen2/Qwen3, Sarvam, MiniMax-M3, DeepSeek-V4, Kimi-K3 and the classes built "
    "on them); vLLM 0.34.0 adds the Ricursive, Mistral-Large-4 and MiniMax-M3 (AMD) decoders. The V1 runner's "
    "handling was not read.",
    example='target {"architectures": ["Qwen3_5MoeForConditionalGeneration"]}, --pp-size 2',
    fix="Serve with --pp-size 1 (use tensor parallelism instead), or a target class whose decoder supports it.",
    sources=(
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py", "25-45",
                     "use_pp: verify_supports_aux_hidden_states_over_pp"),
        EngineSource("vllm", "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py", "48-63",
                     "the inner decoder's flag, else ValueError"),
        EngineSource("vllm", "vllm/model_executor/models/interfaces.py", "1608-1611",
                     "EagleModelMixin: supports_aux_hidden_states_over_pp = False by default"),
        EngineSource("vllm", "vllm/model_executor/models/llama.py", "358", "LlamaModel sets it"),
    ),
)
