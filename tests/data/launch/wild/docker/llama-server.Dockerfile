# In the shape of llama.cpp's .devops/cuda.Dockerfile: a build stage, then a server stage whose
# command is a shell script in the exec form.
ARG UBUNTU_VERSION=24.04
ARG CUDA_VERSION=12.8.1
ARG BASE_CUDA_RUN_CONTAINER=nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu${UBUNTU_VERSION}

FROM ghcr.io/ggml-org/llama.cpp:full-cuda-b11434 AS build

FROM ghcr.io/ggml-org/llama.cpp:server-cuda-b11434 AS server
ENV LLAMA_ARG_HOST=0.0.0.0 \
    MODEL=/models/Qwen3-8B-Q4_K_M.gguf \
    DRAFT=/models/Qwen3-8B-DFlash-b16-F16.gguf
# the draft's cache is set here, the rest comes from the model card
HEALTHCHECK CMD [ "curl", "-f", "http://localhost:8080/health" ]
ENTRYPOINT []
CMD ["sh", "-c", "exec /app/llama-server -m \"$MODEL\" -md \"$DRAFT\" --spec-type draft-dflash \
--spec-draft-p-min 0.75 -ctkd q8_0 -ctvd q8_0"]
