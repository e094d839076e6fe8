"""Writes to labelling data, one module per area (questions, pools, assignments, judgements,
adjudication), each of typed keyword-only functions."""
