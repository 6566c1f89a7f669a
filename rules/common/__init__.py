"""DF1xx: the common draft/target contract, read from the configs; it holds for every engine."""
