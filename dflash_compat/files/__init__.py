"""Reading and writing files safely: bounded reads, guarded writes, safetensors and GGUF headers."""
