"""DF5xx: MLX (the dflash MLX port on mlx-lm)."""
