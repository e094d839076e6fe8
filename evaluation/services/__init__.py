"""Writes of the evaluation app, one module per area: gold sets (finalise, read back, verify,
zip) and evaluation runs (uploaded and retriever runs, the baseline, k sent to the model)."""
