"""lmdeploy's DFlash rules (DF450-DF499): its PyTorch engine's refusals and what users report, each citing the
lmdeploy file:line of the release judged (typed against 0.18.0, the first release with DFlash)."""
