#!/bin/sh
# benchmark script: same server, speculation on
N_DRAFT=0
llama-server -m /models/target.gguf -md /models/draft.gguf --spec-type draft-dflash \
    --spec-draft-n-max ${N_DRAFT} --spec-draft-p-min 0.75 --port 8080 &
wait
