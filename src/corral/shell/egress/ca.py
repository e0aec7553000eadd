"""The installation's egress CA: the key that lets the proxy terminate a sandbox's TLS.

One CA per installation, created on first use under the data folder's private area:
``private/egress-ca/ca.key`` (mode 0600, never bound into any sandbox) and ``ca.pem``. What a
sandbox trusts is a separate file, ``private/egress-trust/ca-bundle.pem``: the system's CAs
followed by ours, so a command trusts public servers *and* the leaves the proxy mints. It
lives in its own folder so binding that folder into a sandbox can never expose the key.

Leaf certificates (ECDSA P-256, one key for every leaf as mitmproxy does, a SAN for the
host) are minted on demand and kept, as ready server :class:`ssl.SSLContext` objects, in a
bounded cache until shortly before they expire.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
import stat
import tempfile
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from corral.errors import ConfigError
from corral.files import make_folders, make_private_folder, write_text_atomically

if TYPE_CHECKING:
    # cryptography loads with the first sandbox that trusts the CA or TLS intercepted, not
    # with the shell service every open of the platform builds.
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

__all__ = [
    "CA_FOLDER",
    "TRUST_FOLDER",
    "TRUST_VARIABLES",
    "CertificateAuthority",
    "trust_environment",
]

CA_FOLDER = "egress-ca"
TRUST_FOLDER = "egress-trust"
TRUST_VARIABLES = (
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "CURL_CA_BUNDLE",
)
"""What OpenSSL, Python requests, Node, git and curl read a trust bundle from."""

_CA_DAYS = 3650
_LEAF_DAYS = 30
_RENEW_BEFORE = dt.timedelta(days=1)
_LEAF_CACHE_SIZE = 512
_SYSTEM_BUNDLES = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
)


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def trust_environment(bundle_path: str) -> dict[str, str]:
    """The variables that make common clients trust ``bundle_path`` (as the sandbox sees it)."""
    return dict.fromkeys(TRUST_VARIABLES, bundle_path)


class CertificateAuthority:
    """The CA under ``private_dir``: created on first use, refused when others may read its key.

    ``clock`` is the clock seam (tests give one); certificates are dated from it.
    """

    def __init__(
        self,
        private_dir: Path,
        *,
        trust_root: Path | None = None,
        clock: Callable[[], dt.datetime] = _utc_now,
    ) -> None:
        self.private_dir = private_dir
        self.key_path = private_dir / CA_FOLDER / "ca.key"
        self.cert_path = private_dir / CA_FOLDER / "ca.pem"
        self.trust_root = trust_root or private_dir
        """The folder the trust bundle's own folder is made in: one sandboxes can reach
        where bubblewrap resolves binds as the sandbox uid (``private/`` is 0700)."""
        self.bundle_path = self.trust_root / TRUST_FOLDER / "ca-bundle.pem"
        self._clock = clock
        self._ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate] | None = None
        self._leaf: ec.EllipticCurvePrivateKey | None = None
        self._leaves: OrderedDict[str, tuple[ssl.SSLContext, dt.datetime]] = OrderedDict()
        self._stamp: tuple[object, ...] | None = None
        self.minted = 0
        """How many leaf certificates this process minted (the cache keeps the rest)."""

    # -- the CA ---------------------------------------------------------------------------

    def certificate_pem(self) -> bytes:
        """The CA certificate, PEM: what clients must trust."""
        from cryptography.hazmat.primitives import serialization

        return self._load()[1].public_bytes(serialization.Encoding.PEM)

    def ensure_bundle(self) -> Path:
        """Write the trust bundle (system CAs + ours) when missing or stale; its path.

        Every proxied call asks: while neither file changed since the last look (their
        stat), nothing is read again."""
        seen = self._bundle_stamp()
        if seen is not None and seen == self._stamp:
            return self.bundle_path
        system = _system_bundle()
        text = (system + "\n" if system else "") + self.certificate_pem().decode("ascii")
        current = self.bundle_path.read_text("ascii") if self.bundle_path.exists() else None
        if current != text:
            self.trust_root.mkdir(parents=True, exist_ok=True, mode=0o700)
            make_folders(self.trust_root, self.bundle_path.parent, mode=0o755)
            write_text_atomically(self.trust_root, self.bundle_path, text, mode=0o644)
        self._stamp = self._bundle_stamp()
        return self.bundle_path

    def _bundle_stamp(self) -> tuple[object, ...] | None:
        try:
            ours = self.bundle_path.stat()
        except OSError:
            return None
        source = _system_bundle_path()
        theirs = Path(source).stat() if source else None
        return (
            source,
            theirs and (theirs.st_mtime_ns, theirs.st_size, theirs.st_ino),
            (ours.st_mtime_ns, ours.st_size, ours.st_ino),
        )

    def _load(self) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        if self._ca is None:
            if not self.key_path.exists():
                self._create()
            self._ca = self._read()
        return self._ca

    def _read(self) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        mode = stat.S_IMODE(self.key_path.stat().st_mode)
        if mode & 0o077:
            raise ConfigError(
                f"the egress CA key {str(self.key_path)!r} is readable by others (mode {mode:o}); "
                f"run `chmod 600 {self.key_path}` and try again"
            )
        try:
            key = serialization.load_pem_private_key(self.key_path.read_bytes(), password=None)
            cert = x509.load_pem_x509_certificate(self.cert_path.read_bytes())
        except (OSError, ValueError) as error:
            raise ConfigError(
                f"the egress CA in {str(self.key_path.parent)!r} cannot be read ({error}); "
                "remove that folder to have a new CA made (sandboxes then trust the new one)"
            ) from None
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ConfigError(
                f"the egress CA key {str(self.key_path)!r} is not an EC key; remove the folder "
                f"{str(self.key_path.parent)!r} to have a new CA made"
            )
        return key, cert

    def _create(self) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        now = self._clock()
        name = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Corral"),
                x509.NameAttribute(NameOID.COMMON_NAME, "Corral egress CA"),
            ]
        )
        public = key.public_key()
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=_CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .sign(key, hashes.SHA256())
        )
        folder = self.key_path.parent
        self.private_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        make_private_folder(self.private_dir, folder)
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        # The certificate first: a key file without its certificate would be read as broken.
        cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
        write_text_atomically(self.private_dir, self.cert_path, cert_pem, mode=0o644)
        write_text_atomically(self.private_dir, self.key_path, key_pem.decode("ascii"), mode=0o600)

    # -- leaves ---------------------------------------------------------------------------

    def server_context(self, host: str) -> ssl.SSLContext:
        """A TLS server context presenting a leaf for ``host``, offering only HTTP/1.1."""
        now = self._clock()
        cached = self._leaves.get(host)
        if cached is not None and cached[1] - _RENEW_BEFORE > now:
            self._leaves.move_to_end(host)
            return cached[0]
        context, expires = self._mint(host, now)
        self._leaves[host] = (context, expires)
        self._leaves.move_to_end(host)
        while len(self._leaves) > _LEAF_CACHE_SIZE:
            self._leaves.popitem(last=False)
        return context

    def _leaf_key(self) -> ec.EllipticCurvePrivateKey:
        """The one key every leaf of this process presents, made with the first leaf."""
        if self._leaf is None:
            from cryptography.hazmat.primitives.asymmetric import ec

            self._leaf = ec.generate_private_key(ec.SECP256R1())
        return self._leaf

    def _mint(self, host: str, now: dt.datetime) -> tuple[ssl.SSLContext, dt.datetime]:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        ca_key, ca_cert = self._load()
        expires = now + dt.timedelta(days=_LEAF_DAYS)
        public = self._leaf_key().public_key()
        leaf = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host[:64])]))
            .issuer_name(ca_cert.subject)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(expires)
            .add_extension(x509.SubjectAlternativeName([_san(host)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                critical=False,
            )
            .sign(ca_key, hashes.SHA256())
        )
        self.minted += 1
        return self._context(leaf), expires

    def _context(self, leaf: x509.Certificate) -> ssl.SSLContext:
        from cryptography.hazmat.primitives import serialization

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        chain = leaf.public_bytes(serialization.Encoding.PEM) + self.certificate_pem()
        key = self._leaf_key().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        # ssl loads a chain only from a file: a 0600 one in the CA's own folder, gone at once.
        with tempfile.NamedTemporaryFile(dir=self.key_path.parent, suffix=".pem") as file:
            file.write(key + chain)
            file.flush()
            context.load_cert_chain(file.name)
        return context


def _san(host: str) -> x509.GeneralName:
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _system_bundle_path() -> str | None:
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile, *_SYSTEM_BUNDLES):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def _system_bundle() -> str:
    path = _system_bundle_path()
    return Path(path).read_text("ascii", errors="ignore").rstrip("\n") if path else ""
