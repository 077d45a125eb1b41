"""``python -m ldp_plugin.cli``: the ``ldp`` console script."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
