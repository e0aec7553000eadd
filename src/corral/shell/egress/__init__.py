"""Egress for sandboxed commands: policy, proxy, bridge, connection log, TLS interception
and its CA, and credentials injected at the proxy."""
