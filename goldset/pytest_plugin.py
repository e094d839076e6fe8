"""Loaded by pytest before Django starts (see `addopts` in pyproject.toml).

Tests run with development defaults unless the environment says otherwise; CI sets its own.
"""

import os

os.environ.setdefault("DEBUG", "1")
