"""Connections: the encrypted credential store and the control plane's lanes.

Sits beside ``shell`` and ``web``: it knows the store, policy and settings below it and
nothing above. The built-in package installs it and the ``connect`` tool drives it.
"""

from __future__ import annotations

from corral.connect.credential_injection import Injection, injection
from corral.connect.credentials import (
    CredentialEntry,
    CredentialStore,
    InjectedCredential,
    Scope,
)
from corral.connect.keyfile import CredentialKey

__all__ = [
    "CredentialEntry",
    "CredentialKey",
    "CredentialStore",
    "InjectedCredential",
    "Injection",
    "Scope",
    "injection",
]
