"""``python -m simweb``: the same command line as ``simweb``."""
import sys

from simweb.cli import main

if __name__ == "__main__":
    sys.exit(main())
