# dflash-check serve: llama.cpp launch command, checked by the rules (0 errors,
#   0 warnings, 0 infos)
# the converter writes dflash.target_layers = target_layer_ids + 1 (llama.cpp
#   captures layer inputs) and takes the draft's vocabulary from
#   --target-model-dir
# run the conversions from the llama.cpp source tree of your build (its
#   convert_hf_to_gguf.py and requirements/requirements-convert_hf_to_gguf.txt),
#   with the model paths as seen from there
# --spec-draft-n-max 15 = block_size - 1 (llama.cpp drafts the anchor plus N
#   mask tokens; its default is 3)
# keep the draft's KV cache unquantised (no -ctkd/-ctvd q8_0): users report
#   acceptance collapsing with a quantised draft cache (llama.cpp issue #25725)
python convert_hf_to_gguf.py examples/qwen3-8b/target \
    --outfile target.gguf \
    --outtype bf16
python convert_hf_to_gguf.py examples/qwen3-8b/draft \
    --target-model-dir examples/qwen3-8b/target \
    --outfile draft.gguf \
    --outtype bf16
llama-server -m target.gguf -md draft.gguf \
    --spec-type draft-dflash \
    --spec-draft-n-max 15 \
    --metrics
