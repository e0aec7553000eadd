"""Egress for sandboxed commands: the proxy, its policy, TLS interception and its CA."""
