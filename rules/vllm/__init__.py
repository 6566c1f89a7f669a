"""DF3xx: vLLM."""
