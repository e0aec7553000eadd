"""Tests of the tool packages, one folder per package."""
