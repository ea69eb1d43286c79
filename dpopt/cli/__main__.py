"""``python -m dpopt.cli``: the ``dpopt`` command."""

import sys

from dpopt.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
