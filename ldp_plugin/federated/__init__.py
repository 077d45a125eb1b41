"""Federated analytics: the device randomizes and enforces its own budget, configured only by its
owner; the server sees only validated reports. The core (query, device, collector) needs no extra
package; the Flower apps (:mod:`ldp_plugin.federated.app`) need the ``flower`` extra
(``pip install 'ldp-plugin[flower]'``)."""

from .collector import Collector
from .config import DeviceConfig
from .device import REFUSAL_REASONS, DeviceFleet, DeviceRefusal
from .keystore import Keystore
from .policy import DevicePolicy
from .query import QUERY_VERSION, Query

__all__ = ["Query", "QUERY_VERSION", "DeviceFleet", "DevicePolicy", "DeviceRefusal", "DeviceConfig", "Keystore", "REFUSAL_REASONS", "Collector"]
