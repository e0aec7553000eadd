"""The `corral` command line: a module per command group or single command, named like it.

``cli/shells.py`` holds ``corral shells …``, ``cli/check_command.py`` ``corral
check-command``; ``main.py`` assembles them, and ``_``-modules are shared helpers.
"""
