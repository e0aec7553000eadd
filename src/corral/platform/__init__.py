"""The platform: composition of store, policy, tools and (later) runtime."""

from corral.platform.core import Platform, open, open_platform

__all__ = ["Platform", "open", "open_platform"]
