"""Credential placeholders and their swap at the egress proxy (no network: pure functions)."""

from __future__ import annotations

import base64
import dataclasses
import string

import pytest

from corral.errors import UsageError
from corral.shell.egress.credentials import (
    CredentialBinding,
    placeholder,
    swap_credentials,
)
from corral.shell.egress.policy import egress_policy_for

SECRETS = [
    "ghp_" + "Q7x2Lm9KpR4tW8zN1cV5bY3hJ6fD0sA2gE7u",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "sk-proj-" + "AbC123" * 8,
    "0123456789",
    "a",
    "!!!!",
    "x-",
]


def _binding(secret: str, name: str = "forge", **kw: object) -> CredentialBinding:
    fields: dict[str, object] = {"hosts": ("api.test",), "inject_as": "header"} | kw
    return CredentialBinding(name=name, secret=secret, **fields)  # type: ignore[arg-type]


def _class(char: str) -> str:
    for name, alphabet in (
        ("lower", string.ascii_lowercase),
        ("upper", string.ascii_uppercase),
        ("digit", string.digits),
    ):
        if char in alphabet:
            return name
    return char


@pytest.mark.parametrize("secret", SECRETS)
def test_a_placeholder_has_the_secrets_shape_and_is_never_it(secret: str) -> None:
    made = placeholder(_binding(secret))

    assert made != secret
    assert len(made) == len(secret)
    assert made == placeholder(_binding(secret))
    if len(secret) > 10:
        assert [_class(c) for c in made] == [_class(c) for c in secret]


def test_prefixes_are_kept_and_names_tell_placeholders_apart() -> None:
    assert placeholder(_binding(SECRETS[0])).startswith("ghp_")
    assert placeholder(_binding(SECRETS[1])).startswith("github_pat_")
    assert placeholder(_binding(SECRETS[2])).startswith("sk-proj-")
    assert placeholder(_binding(SECRETS[0], "a")) != placeholder(_binding(SECRETS[0], "b"))


def test_hosts_and_wildcards_bind() -> None:
    binding = _binding("s" * 20, hosts=("github.com", "*.example.com"))
    assert binding.binds("github.com") and binding.binds("GitHub.com.")
    assert binding.binds("api.example.com")
    assert not binding.binds("example.com")
    assert not binding.binds("evil-github.com") and not binding.binds("github.com.evil.io")
    assert "s" * 20 not in repr(binding)


def test_a_query_binding_must_name_its_parameter() -> None:
    with pytest.raises(UsageError, match="--inject-field"):
        _binding("s" * 20, inject_as="query")


def test_basic_auth_is_swapped_inside_its_encoding_only_for_the_exact_password() -> None:
    binding = _binding("tok-" + "7" * 20, inject_as="basic")
    stand_in = placeholder(binding)

    def basic(password: str) -> bytes:
        return b"Basic " + base64.b64encode(f"x-access-token:{password}".encode())

    _, headers, used = swap_credentials(
        "api.test", "/", [(b"authorization", basic(stand_in))], [binding]
    )
    assert headers == [(b"authorization", basic(binding.secret))] and used == ["forge"]
    _, headers, used = swap_credentials(
        "api.test", "/", [(b"authorization", basic(stand_in + "x"))], [binding]
    )
    assert headers == [(b"authorization", basic(stand_in + "x"))] and used == []
    _, headers, used = swap_credentials(
        "other.test", "/", [(b"authorization", basic(stand_in))], [binding]
    )
    assert headers == [(b"authorization", basic(stand_in))] and used == []


def test_hosts_bound_by_a_wildcard_credential_are_intercepted() -> None:
    policy = dataclasses.replace(
        egress_policy_for({"allowed_domains": ["*.forge.test", "forge.test", "other.test"]}),
        credential_hosts=frozenset({"*.forge.test"}),
    )
    binding = CredentialBinding(
        name="forge", secret="tok-" + "a" * 20, hosts=("*.forge.test",), inject_as="header"
    )
    assert policy.decide_host("api.forge.test", 443).intercept
    assert binding.binds("api.forge.test")
    # Like the binding, the wildcard is for the names below the domain, not the domain.
    assert not policy.decide_host("forge.test", 443).intercept
    assert not binding.binds("forge.test")
    assert not policy.decide_host("other.test", 443).intercept
