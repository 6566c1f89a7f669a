"""Property-based fuzzing of dflash-check: hostile configs, safetensors headers and command lines (issue 12)."""
