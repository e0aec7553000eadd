"""The host plane: commands handed to an operator-provisioned broker on a Unix socket.

The broker (``corral host-broker``) is a separate process the operator starts on the host,
with its own command allowlist, folder roots and timeout ceiling. The platform reaches it
only for a cwd owned by a ``host`` source and only for callers holding ``exec.host``.
"""
