"""`python -m corral`."""

from corral.cli.main import app

app()
