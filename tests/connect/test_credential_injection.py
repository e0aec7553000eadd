"""Credentials for injection at the egress proxy: where they may be sent, checked on the way
in, kept across value updates, and listed for the proxy's bindings (user's over project's)."""

from __future__ import annotations

import pytest

from corral.connect import Injection, injection
from corral.connect.credential_injection import check_inject_host
from corral.errors import UsageError
from corral.platform import Platform

VALUE = "ghp_0123456789abcdefghijABCDEFGHIJ012345"


def test_hosts_are_checked_and_lowercased() -> None:
    assert injection(["GitHub.com.", "*.Example.com", "github.com"], "header") == Injection(
        hosts=("github.com", "*.example.com"), inject_as="header"
    )
    assert injection([], "header") is None


@pytest.mark.parametrize("bad", ["https://github.com", "github.com:443", "a b", "*", "com", ""])
def test_a_bad_inject_host_says_what_to_give(bad: str) -> None:
    with pytest.raises(UsageError, match=r"give a name such as 'github\.com'"):
        check_inject_host(bad)


@pytest.mark.parametrize(
    ("hosts", "inject_as", "field", "says"),
    [
        ([], "basic", "", "name at least one host"),
        (["api.test"], "cookie", "", "use one of header, query, basic"),
        (["api.test"], "query", "", "add --inject-field"),
        (["api.test"], "basic", "X-Token", "leave out --inject-field"),
        (["api.test"], "header", "bad header", "not a header or parameter name"),
    ],
)
def test_bad_injections_are_explained(
    hosts: list[str], inject_as: str, field: str, says: str
) -> None:
    with pytest.raises(UsageError, match=says):
        injection(hosts, inject_as, field)


async def test_injected_credentials_for_the_proxy(platform: Platform) -> None:
    owner = await platform.caller()
    store = platform.credentials
    git = Injection(hosts=("github.com",), inject_as="basic")
    await store.set("forge", VALUE, user_id=owner.user_id, injection=git)
    await store.set("plain", VALUE, user_id=owner.user_id)
    project = Injection(hosts=("api.example.com",), inject_as="query", field="key")
    await store.set(
        "search", "proj-" + VALUE, user_id=owner.user_id, scope="project", injection=project
    )
    await store.set(
        "search",
        "mine-" + VALUE,
        user_id=owner.user_id,
        injection=Injection(hosts=("api.example.com",), inject_as="header"),
    )

    # A new value keeps where it may be sent.
    entry = await store.set("forge", VALUE + "x", user_id=owner.user_id)
    assert entry.injection == git

    found = await store.injected(user_id=owner.user_id)
    assert [(c.name, c.value, c.injection.inject_as) for c in found] == [
        ("forge", VALUE + "x", "basic"),
        ("search", "mine-" + VALUE, "header"),
    ]
    assert VALUE not in repr(found)
    listed = {e.name: e.injection for e in await store.entries(user_id=owner.user_id)}
    assert listed["plain"] is None and listed["forge"] == git
