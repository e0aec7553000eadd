"""Egress for sandboxed commands: policy, proxy, bridge, connection log."""
