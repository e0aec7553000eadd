"""The `corral` command line: one module per command group."""
