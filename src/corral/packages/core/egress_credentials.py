"""The credential store's injected credentials as the egress proxy's bindings."""

from __future__ import annotations

from corral.connect.credentials import CredentialStore, InjectedCredential
from corral.shell.egress.credentials import CredentialBinding

__all__ = ["binding_of", "injected_bindings"]


def binding_of(credential: InjectedCredential) -> CredentialBinding:
    """The proxy's binding of one stored credential that names inject hosts."""
    return CredentialBinding(
        name=credential.name,
        secret=credential.value,
        hosts=credential.injection.hosts,
        inject_as=credential.injection.inject_as,
        field_name=credential.injection.field,
    )


async def injected_bindings(store: CredentialStore, user_id: str) -> list[CredentialBinding]:
    """The bindings of every credential ``user_id`` can use that names inject hosts."""
    return [binding_of(credential) for credential in await store.injected(user_id=user_id)]
