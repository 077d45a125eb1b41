"""Compatibility aliases (removed next round): the old import paths of modules moved by the layout
by role (issue 33), registered as aliases of their new homes — no copies, no shims on disk.

=====================================  ==========================================
old path                               new home
=====================================  ==========================================
``ldp_plugin.estimation_lsq``          :mod:`ldp_plugin.estimation.least_squares`
``ldp_plugin.estimation_sketch``       :mod:`ldp_plugin.estimation.sketch`
``ldp_plugin.series``                  :mod:`ldp_plugin.simulate`
``ldp_plugin.choose_series``           :mod:`ldp_plugin.choose`
``ldp_plugin.mechanisms.cohort_base``   :mod:`ldp_plugin.mechanisms.cohort.base`
``ldp_plugin.mechanisms.cohort_server`` :mod:`ldp_plugin.mechanisms.cohort.server`
``ldp_plugin.mechanisms.numeric_server`` :mod:`ldp_plugin.mechanisms.numeric.server`
``ldp_plugin.cli_series``              :mod:`ldp_plugin.cli.series`
``ldp_plugin.cli_types``               :mod:`ldp_plugin.cli._common`
=====================================  ==========================================
"""

from __future__ import annotations

import sys

from . import choose, simulate
from .cli import _common as cli_common, series as cli_series
from .estimation import least_squares, sketch
from .mechanisms.cohort import base as cohort_base, server as cohort_server
from .mechanisms.numeric import server as numeric_server

ALIASES = {
    "ldp_plugin.estimation_lsq": least_squares,
    "ldp_plugin.estimation_sketch": sketch,
    "ldp_plugin.series": simulate,
    "ldp_plugin.choose_series": choose,
    "ldp_plugin.mechanisms.cohort_base": cohort_base,
    "ldp_plugin.mechanisms.cohort_server": cohort_server,
    "ldp_plugin.mechanisms.numeric_server": numeric_server,
    "ldp_plugin.cli_series": cli_series,
    "ldp_plugin.cli_types": cli_common,
}

for _old, _module in ALIASES.items():
    sys.modules.setdefault(_old, _module)
    _parent, _, _leaf = _old.rpartition(".")
    setattr(sys.modules[_parent], _leaf, _module)
