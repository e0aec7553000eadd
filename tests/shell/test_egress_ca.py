"""The installation's egress CA: made once, key kept 0600, leaves minted per host and cached."""

from __future__ import annotations

import datetime as dt
import os
import stat
from pathlib import Path

import pytest
from cryptography import x509

from corral.errors import ConfigError
from corral.shell.egress.ca import TRUST_VARIABLES, CertificateAuthority, trust_environment


def test_the_ca_is_made_once_with_its_key_private(tmp_path: Path) -> None:
    ca = CertificateAuthority(tmp_path / "private")
    pem = ca.certificate_pem()

    assert stat.S_IMODE(ca.key_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(ca.key_path.parent.stat().st_mode) == 0o700
    cert = x509.load_pem_x509_certificate(pem)
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert CertificateAuthority(tmp_path / "private").certificate_pem() == pem


def test_a_key_others_may_read_is_refused(tmp_path: Path) -> None:
    ca = CertificateAuthority(tmp_path / "private")
    ca.certificate_pem()
    os.chmod(ca.key_path, 0o644)

    with pytest.raises(ConfigError, match=r"readable by others .*chmod 600"):
        CertificateAuthority(tmp_path / "private").certificate_pem()


def test_the_bundle_holds_the_system_cas_and_ours_apart_from_the_key(tmp_path: Path) -> None:
    ca = CertificateAuthority(tmp_path / "private")
    bundle = ca.ensure_bundle()

    text = bundle.read_text()
    assert text.endswith(ca.certificate_pem().decode())
    assert bundle.parent != ca.key_path.parent
    assert not any("PRIVATE KEY" in p.read_text() for p in bundle.parent.iterdir())
    if Path("/etc/ssl/certs/ca-certificates.crt").is_file():
        assert text.count("BEGIN CERTIFICATE") > 1
    assert trust_environment("/etc/corral/ca.pem") == dict.fromkeys(
        TRUST_VARIABLES, "/etc/corral/ca.pem"
    )


def test_leaves_are_cached_per_host_and_renewed_before_they_expire(tmp_path: Path) -> None:
    now = [dt.datetime(2026, 12, 5, tzinfo=dt.UTC)]
    ca = CertificateAuthority(tmp_path / "private", clock=lambda: now[0])

    first = ca.server_context("api.test")
    assert ca.server_context("api.test") is first
    assert ca.server_context("other.test") is not first
    assert ca.minted == 2

    now[0] += dt.timedelta(days=29, hours=1)
    assert ca.server_context("api.test") is not first
    assert ca.minted == 3
    assert not [p for p in ca.key_path.parent.iterdir() if p.name not in {"ca.key", "ca.pem"}]
