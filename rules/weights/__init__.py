"""DF6xx: the draft's weights, from its safetensors headers (no tensor data is read)."""
