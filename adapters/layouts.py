"""The built-in layouts, one table per framework: where a target keeps its embedding, decoder layers, final
norm and head, as dotted paths from the loaded model. A layout only names paths (`torch_layouts` and
`mlx_layouts` follow them); a model_type maps to its layout in registry.py. Pure data: no torch, no mlx."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["Layout", "TORCH_LAYOUTS", "MLX_LAYOUTS"]


@dataclass(frozen=True)
class Layout:
    """One layout. `head` None: the framework's default head lookup; `tied`: no head at that path means the
    head is tied to the embedding (MLX: its `as_linear`); `project_in` / `project_out`: projections around
    the decoder (OPT-350m), None where the layout has none."""

    cls: str  # the adapter class name shown in reports and tracebacks
    name: str  # its short name (`--adapter NAME`, reports)
    embed: str
    layers: str
    norm: Optional[str] = None
    head: Optional[str] = None
    tied: bool = False
    project_in: Optional[str] = None
    project_out: Optional[str] = None
    doc: str = ""


# PyTorch (transformers), verified against transformers 5.24 (tests/test_adapters_builtin.py builds each)
TORCH_LAYOUTS: dict[str, Layout] = {
    "gpt2": Layout("GPT2Adapter", "gpt2", "transformer.wte", "transformer.h", "transformer.ln_f", "lm_head",
                   doc="`*LMHeadModel` / `*ForCausalLM` with the decoder at `.transformer` and the blocks at `.h` "
                   "(GPT-2, GPT-J, GPT-Neo, CodeGen, GPTBigCode); the head is `lm_head` (tied to `wte` in GPT-2)."),
    "gpt-neox": Layout("GPTNeoXAdapter", "gpt-neox", "gpt_neox.embed_in", "gpt_neox.layers",
                       "gpt_neox.final_layer_norm",
                       doc="`GPTNeoXForCausalLM`: the head is `lm_head` in transformers 5 and `embed_out` in 4.x (the "
                       "default lookup, `lm_head` else `get_output_embeddings()`, finds either)."),
    "opt": Layout("OPTAdapter", "opt", "model.decoder.embed_tokens", "model.decoder.layers",
                  "model.decoder.final_layer_norm", "lm_head", project_in="model.decoder.project_in",
                  project_out="model.decoder.project_out",
                  doc="`OPTForCausalLM`. When `word_embed_proj_dim` != `hidden_size` (OPT-350m) `project_in` widens the "
                  "embedding before layer 0 and `project_out` narrows the decoder output before `lm_head`; they are "
                  "None in every other OPT, as is the final norm when do_layer_norm_before is False."),
    "falcon": Layout("FalconAdapter", "falcon", "transformer.word_embeddings", "transformer.h", "transformer.ln_f",
                     "lm_head", doc="`FalconForCausalLM` and `BloomForCausalLM`. Bloom normalises the embedding inside "
                     "its forward; like every adapter, the embedding gives the raw table rows. Bloom takes no "
                     "position_ids (ALiBi): it reads positions from the cache length, which the runtime keeps equal."),
    "phi": Layout("PhiAdapter", "phi", "model.embed_tokens", "model.layers", "model.final_layernorm", "lm_head",
                  doc="`PhiForCausalLM`: the standard `model.*` names except the final norm, and an `lm_head` with a "
                  "bias."),
}

# MLX (mlx-lm), for the layouts whose embedding or head is not where the DFlash MLX loader looks; verified
# against mlx-lm 0.32 (tests/test_adapters_mlx.py)
MLX_LAYOUTS: dict[str, Layout] = {
    "gpt2": Layout("MLXGPT2Adapter", "gpt2", "model.wte", "model.h", "model.ln_f", "lm_head", tied=True,
                   doc="mlx-lm `gpt2` (head tied to `wte`) and `gptj` (its own `lm_head`)."),
    "gpt-neox": Layout("MLXGPTNeoXAdapter", "gpt-neox", "model.embed_in", "model.h", "model.final_layer_norm",
                       "model.embed_out", doc="mlx-lm `gpt_neox`: the head lives inside the decoder "
                       "(`model.embed_out`), where the DFlash MLX loader does not look; it would fall back to "
                       "`embed_in.as_linear`, a different matrix."),
    "gpt-bigcode": Layout("MLXGPTBigCodeAdapter", "gpt-bigcode", "transformer.wte", "transformer.h",
                          "transformer.ln_f", "lm_head", tied=True,
                          doc="mlx-lm `gpt_bigcode`, `qwen` and `exaone`: `lm_head`, or the tied `wte`."),
    "dbrx": Layout("MLXDBRXAdapter", "dbrx", "transformer.wte", "transformer.blocks", "transformer.norm_f", "lm_head",
                   doc="mlx-lm `dbrx`."),
    "internlm2": Layout("MLXInternLM2Adapter", "internlm2", "model.tok_embeddings", "model.layers", "model.norm",
                        "output", tied=True, doc="mlx-lm `internlm2`: the head is `output`, or the tied "
                        "`tok_embeddings`."),
    "openelm": Layout("MLXOpenELMAdapter", "openelm", "transformer.token_embeddings", "transformer.layers",
                      "transformer.norm", "lm_head", tied=True,
                      doc="mlx-lm `openelm`: `lm_head`, or the tied `token_embeddings` when share_input_output_layers."),
    "plamo": Layout("MLXPlamoAdapter", "plamo", "model.embed_tokens", "model.layers.layers", "model.norm", "lm_head",
                    doc="mlx-lm `plamo`: `model.layers` is a PlamoDecoder module holding the list at `.layers`; the "
                    "default lookup would take the module itself for the layer list."),
}
