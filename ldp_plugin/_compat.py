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
``ldp_plugin.cli_discovery``           :mod:`ldp_plugin.cli.discovery`
``ldp_plugin.mechanisms.longitudinal_hashed`` :mod:`ldp_plugin.mechanisms.longitudinal.hashed`
``ldp_plugin.mechanisms.longitudinal_unary``  :mod:`ldp_plugin.mechanisms.longitudinal.unary`
``ldp_plugin.memo``                    :mod:`ldp_plugin.mechanisms.longitudinal.memoized`
``ldp_plugin._kernels``                :mod:`ldp_plugin.sampling.kernels`
``ldp_plugin._env``                    :mod:`ldp_plugin.sampling._env`
``ldp_plugin._opendp_boundary``        :mod:`ldp_plugin._boundary.opendp`
``ldp_plugin.workload``                :mod:`ldp_plugin._boundary.workload`
``ldp_plugin.measurements_series``     :mod:`ldp_plugin.measurements` (``make_longitudinal``, the means' pairs)
``ldp_plugin.measurements_families``   :mod:`ldp_plugin.measurements` (the families' pairs)
``ldp_plugin.choose_distribution``     :mod:`ldp_plugin.choose.distribution`
=====================================  ==========================================
"""

from __future__ import annotations

import sys

from . import choose, measurements, registry, simulate
from .cli import _common as cli_common, series as cli_series
from .estimation import least_squares, sketch
from .mechanisms.cohort import base as cohort_base, server as cohort_server
from .mechanisms.numeric import server as numeric_server
from .mechanisms.longitudinal import hashed as longitudinal_hashed, memoized, unary as longitudinal_unary
from .sampling import _env, kernels
from ._boundary import opendp as opendp_boundary, workload
from .cli import discovery as cli_discovery
from .choose import distribution as choose_distribution

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
    "ldp_plugin.cli_discovery": cli_discovery,
    "ldp_plugin.mechanisms.longitudinal_hashed": longitudinal_hashed,
    "ldp_plugin.mechanisms.longitudinal_unary": longitudinal_unary,
    "ldp_plugin.memo": memoized,
    "ldp_plugin._kernels": kernels,
    "ldp_plugin._env": _env,
    "ldp_plugin._opendp_boundary": opendp_boundary,
    "ldp_plugin.workload": workload,
    "ldp_plugin.measurements_series": measurements,
    "ldp_plugin.measurements_families": measurements,
    "ldp_plugin.choose_distribution": choose_distribution,
}

#: names that moved out of a module, kept readable at the old place: ``(old module, name)`` -> object
#: (``from ldp_plugin.verification import self_test`` — the self-test moved to the registry, which
#: drives the verification layers; verification never imports the registry)
ATTRIBUTE_ALIASES = {
    ("ldp_plugin.verification", "self_test"): registry.self_test,
    ("ldp_plugin.verification", "wrapper_instances"): registry.wrapper_instances,
    ("ldp_plugin.verification.seeded_bugs", "seeded_declaration_bugs"): registry.seeded_declaration_bugs,
}

for _old, _module in ALIASES.items():
    sys.modules.setdefault(_old, _module)
    _parent, _, _leaf = _old.rpartition(".")
    setattr(sys.modules[_parent], _leaf, _module)

for (_module_name, _name), _obj in ATTRIBUTE_ALIASES.items():
    setattr(sys.modules[_module_name], _name, _obj)
