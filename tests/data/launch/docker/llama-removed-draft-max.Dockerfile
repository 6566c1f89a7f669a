# llama.cpp server with a DFlash draft, command copied from an older README
FROM ghcr.io/ggml-org/llama.cpp:server-cuda-b11434

COPY models/ /models/
ENV LLAMA_ARG_HOST=0.0.0.0
EXPOSE 8080

CMD ["-m", "/models/Qwen3-8B-Q4_K_M.gguf", \
     "-md", "/models/Qwen3-8B-DFlash-b16-F16.gguf", \
     "--spec-type", "draft-dflash", \
     "--draft-max", "15", "--spec-draft-p-min", "0.75", \
     "-ngl", "99"]
