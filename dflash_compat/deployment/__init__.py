"""The deployment: how a pair will be launched on an engine (its options), from whichever door they come in."""
