"""`python -m graphmode ...`: the same as the `graphmode` command."""
import sys

from graphmode.cli import main

if __name__ == "__main__":
    sys.exit(main())
