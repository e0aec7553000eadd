"""Persistence: engine, schema and migrations."""

from corral.store.engine import make_engine, make_sessionmaker
from corral.store.migrate import upgrade

__all__ = ["make_engine", "make_sessionmaker", "upgrade"]
