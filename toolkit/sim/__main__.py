"""``python -m toolkit.sim``: the same as ``toolkit sim``."""

from __future__ import annotations

import sys

from toolkit.sim._cli import main

if __name__ == "__main__":
    sys.exit(main())
