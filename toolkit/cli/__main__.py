"""``python -m toolkit.cli``: the same as the ``toolkit`` command."""

import sys

from toolkit.cli._main import main

if __name__ == "__main__":  # importing the module (docs, tools) must not run the CLI
    sys.exit(main())
