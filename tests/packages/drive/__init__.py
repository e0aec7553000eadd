"""Tests of the drive package: real files, real processes, real SQLite."""
