"""Exception types of ldp-plugin.

Every error subclasses a built-in that callers already catch (``ValueError``/``TypeError``).
Messages name the parameter and the allowed range; they never contain user data values.
"""

from __future__ import annotations

__all__ = ["LDPParameterError", "LDPInputError", "PrivacyVerificationError", "UnderdeterminedWarning", "LDPArgumentError"]


class LDPParameterError(ValueError):
    """A mechanism parameter is outside its allowed range (the message names it and the range)."""


class LDPInputError(ValueError):
    """User data handed to a randomizer is invalid. The message never echoes the offending value."""


class PrivacyVerificationError(ValueError):
    """The realized channel of a mechanism does not satisfy its declared privacy bound."""


class UnderdeterminedWarning(UserWarning):
    """An estimate from a design that cannot identify every item (a cohort oracle built with
    ``underdetermined=True``): its intervals were widened to the whole range."""


class LDPArgumentError(LDPParameterError, TypeError):
    """A constructor called with a missing, unknown or positional argument: an
    :class:`LDPParameterError` (the message names the parameter and what the constructor takes)
    that is also the ``TypeError`` Python raises for a bad call."""
