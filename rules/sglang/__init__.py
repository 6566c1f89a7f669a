"""DF4xx: SGLang."""
