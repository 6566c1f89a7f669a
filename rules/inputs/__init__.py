"""DF0xx: what the checker could not fully judge (inputs, deep checks skipped, engine releases outside the window)."""
