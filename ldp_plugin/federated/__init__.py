"""Federated analytics: the device randomizes and enforces its own budget; the server sees only
validated reports. The core (query, device, collector) needs no extra package; the Flower apps
(:mod:`ldp_plugin.federated.flower`) need the ``flower`` extra (``pip install 'ldp-plugin[flower]'``)."""

from .collector import Collector
from .device import REFUSAL_REASONS, DevicePolicy, DeviceFleet
from .query import QUERY_VERSION, Query

__all__ = ["Query", "QUERY_VERSION", "DeviceFleet", "DevicePolicy", "REFUSAL_REASONS", "Collector"]
