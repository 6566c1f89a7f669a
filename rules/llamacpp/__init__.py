"""DF8xx: llama.cpp (GGUF files, or checkpoints as its converter will write them)."""
