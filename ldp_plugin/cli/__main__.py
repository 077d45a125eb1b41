"""``python -m ldp_plugin.cli``: the ``ldp`` console script."""

import sys

from . import main

sys.exit(main())
