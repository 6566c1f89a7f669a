"""DF7xx: the target's module tree (built on the meta device, or an mlx-lm model)."""
