"""The composition root (:mod:`~corral.platform.composition`) and the Platform facade."""

from corral.platform.composition import open, open_platform
from corral.platform.core import Platform

__all__ = ["Platform", "open", "open_platform"]
