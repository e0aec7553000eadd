"""Interception for real sandboxed commands (issue 35): ``curl`` inside bubblewrap reaches an
intercepted HTTPS host trusting the installation CA through the bundle the platform binds
in (no ``--cacert``), and a credential bound to that host is swapped in at the proxy while
the command holds only its placeholder: the secret is in none of its variables, files or
``/proc``, nor sent to an unbound host. The CA key is out of the sandbox's reach.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import corral
from corral.connect import Injection
from corral.packages.core.egress_credentials import injected_bindings
from corral.platform import Platform
from corral.runtime.hooks.config import HookHandler
from corral.shell.egress.credentials import placeholder
from corral.shell.egress.tls import TlsInterceptor
from corral.shell.egress.upstream import UpstreamConnector
from corral.web.fetch.addresses import AddressRules
from tests.shell.conftest import BWRAP, egress_hook_runner, shells
from tests.shell.test_egress import UID, FakeNames, _folder, world
from tests.shell.test_egress_tls_proxy import Site, site

pytestmark = pytest.mark.skipif(not BWRAP, reason="bubblewrap cannot run here")
__all__ = ["site", "world"]  # fixtures, shared with the modules they come from

_SCAN = """\
import os, sys
secret = (sys.argv[1] + sys.argv[2]).encode()
found = [k for k, v in os.environ.items() if secret in v.encode()]
for pid in filter(str.isdigit, os.listdir("/proc")):
    for part in ("environ", "cmdline"):
        try:
            with open(f"/proc/{pid}/{part}", "rb") as f:
                if secret in f.read():
                    found.append(f"/proc/{pid}/{part}")
        except OSError:
            pass
home = os.environ.get("HOME", "/tmp")
trust = os.path.dirname(os.environ["SSL_CERT_FILE"])
for top in ("/tmp", home, "/etc", ".", trust):
    for folder, _, names in os.walk(top):
        for name in names:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as f:
                    if secret in f.read():
                        found.append(path)
            except OSError:
                pass
print("scanned:", " ".join(found) or "clean")
"""

SECRET = "ghp_" + "S3cr3tValueNeverInTheSandbox0000aBcD"


@pytest.fixture
async def platform(world: Path, site: Site) -> AsyncIterator[tuple[Platform, Path]]:
    data = _folder(world, "data-", 0o755)
    async with corral.open(data, sandbox="bubblewrap") as platform:
        service = shells(platform)
        service.enable_egress(
            UpstreamConnector.unsafe_mapping(
                {"api.test": "127.0.0.1", "other.test": "127.0.0.1"},
                judge=AddressRules().refusal,
                resolver=FakeNames(),
            )
        )
        interceptor = service.egress_interceptor
        assert isinstance(interceptor, TlsInterceptor)
        # The stand-in site's certificate comes from its own CA, not the system store.
        service.egress_interceptor = dataclasses.replace(interceptor, upstream_tls=site.trust)
        work = _folder(world, "work-", 0o777)
        if os.geteuid() == 0:
            os.chown(work, UID, UID)
        (work / "site-ca.pem").write_bytes(site.ca_pem)
        (work / "site-ca.pem").chmod(0o644)
        await platform.admin.add_source("work", str(work))
        await platform.admin.grant_source(
            "work", principal_kind="role", principal="owner", rights="rwx"
        )
        await platform.admin.set_live("shell_network_mode", "proxy")
        await platform.admin.set_live(
            "egress",
            {
                "allowed_domains": [
                    {"domain": "api.test", "ports": [site.port]},
                    {"domain": "other.test", "ports": [site.port]},
                ]
            },
        )
        owner = await platform.caller()
        await platform.credentials.set(
            "forge",
            SECRET,
            user_id=owner.user_id,
            injection=Injection(hosts=("api.test",), inject_as="header"),
        )
        yield platform, work


async def test_a_sandboxed_command_holds_the_placeholder_and_the_host_gets_the_secret(
    platform: tuple[Platform, Path], site: Site
) -> None:
    running, work = platform
    owner = await running.caller()
    (binding,) = await injected_bindings(running.credentials, owner.user_id)
    stand_in = placeholder(binding)
    assert stand_in != SECRET
    # The secret travels in two halves, joined inside the scan only, so no command line
    # holds it whole.
    half = len(SECRET) // 2
    (work / "scan.py").write_text(_SCAN)
    command = (
        f"FORGE={stand_in}; "
        f'curl -sS -H "Authorization: Bearer $FORGE" https://api.test:{site.port}/whoami; echo; '
        # other.test is not bound: tunnelled untouched, verified against the site's own CA.
        f'curl -sS --cacert site-ca.pem -H "Authorization: Bearer $FORGE" '
        f"https://other.test:{site.port}/whoami; echo; "
        'echo "trust: $(ls "$(dirname "$SSL_CERT_FILE")")"; '
        f"python3 scan.py {SECRET[:half]} {SECRET[half:]}"
    )
    result = await running.call_tool("execute", {"command": command, "cwd": "work://"})
    lines = result.text.splitlines()
    # What the servers received (the result itself is redacted of stored values).
    assert f"Bearer {stand_in}" in lines, result.text
    # The bound trust folder holds the bundle only (the CA key lies in private/, which the
    # analyser keeps commands from naming and no mount exposes).
    assert "trust: ca-bundle.pem" in lines, result.text
    assert [s["auth"] for s in site.seen] == [f"Bearer {SECRET}", f"Bearer {stand_in}"]
    assert "scanned: clean" in lines, result.text
    records = result.data["egress"]
    assert records["refused_connections"] == [], records


async def test_a_command_hook_trusts_the_proxy_ca_for_an_intercepted_domain(
    platform: tuple[Platform, Path], site: Site
) -> None:
    running, work = platform
    await running.admin.set_live(
        "egress",
        {"allowed_domains": [{"domain": "api.test", "methods": ["GET"], "ports": [site.port]}]},
    )
    runner = egress_hook_runner(running, work, UID)
    # No --cacert: the hook trusts the leaf the proxy minted through the bundle it is given.
    got = await runner.run(
        HookHandler(kind="command", command=f"curl -sS https://api.test:{site.port}/whoami"),
        b"{}",
    )
    assert got.stdout == "none", got
    posted = await runner.run(
        HookHandler(
            kind="command",
            command=f"curl -sS -o /dev/null -w '%{{http_code}}' -d x https://api.test:{site.port}/x",
        ),
        b"{}",
    )
    assert posted.stdout == "403", posted
    assert [s["method"] for s in site.seen] == ["GET"]
