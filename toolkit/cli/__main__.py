"""``python -m toolkit.cli``: the same as the ``toolkit`` command."""

import sys

from toolkit.cli._main import main

sys.exit(main())
