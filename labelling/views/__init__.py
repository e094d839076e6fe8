"""Thin views, one module per area; `labelling/urls.py` maps them."""
