"""`python -m goldeval …`: the evaluation CLI a RAG team's CI runs on an exported gold set."""

import sys

from goldeval.cli import main

if __name__ == "__main__":
    sys.exit(main())
