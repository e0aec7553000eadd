"""Persistence: engine, schema and migrations."""

from corral.store.engine import check_reachable, make_engine, make_sessionmaker
from corral.store.migrate import upgrade

__all__ = ["check_reachable", "make_engine", "make_sessionmaker", "upgrade"]
