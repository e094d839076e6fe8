"""`python -m goldeval …`, kept as an alias of `python -m goldeval …` for existing CI scripts."""

import sys

from goldeval.cli import main

if __name__ == "__main__":
    sys.exit(main())
