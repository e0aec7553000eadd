"""Shell execution: command analysis (``corral.shell.analysis``), and later the path gate,
the clean environment, the sandboxed runner and background shells."""
