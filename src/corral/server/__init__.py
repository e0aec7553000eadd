"""The HTTP server: FastAPI routes over the platform."""

from corral.server.app import create_app

__all__ = ["create_app"]
