"""The Fernet key that encrypts stored credentials, kept in the data folder's private area.

The file holds one key per line, newest first, mode 0600. Decryption accepts any listed key
(:class:`cryptography.fernet.MultiFernet`), which is what makes rotation safe: the new key
is written *in front of* the old one before any row is re-encrypted, and the old one is
dropped only once every row was, so a crash in between loses nothing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from corral.errors import ConfigError
from corral.files import write_text_atomically

if TYPE_CHECKING:
    from cryptography.fernet import MultiFernet

__all__ = ["KEY_FILE_NAME", "CredentialKey"]

KEY_FILE_NAME = "credentials.key"


class CredentialKey:
    """The key file at ``path``: created on first use, refused when others may read it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def in_private_dir(cls, private_dir: Path) -> CredentialKey:
        return cls(private_dir / KEY_FILE_NAME)

    def keys(self) -> list[bytes]:
        """The keys, newest first; a missing file is created with one fresh key."""
        # cryptography loads with the first credential or sealed approval, not every open.
        from cryptography.fernet import Fernet

        if not self.path.exists():
            self._write([Fernet.generate_key()])
        mode = stat.S_IMODE(self.path.stat().st_mode)
        if mode & 0o077:
            raise ConfigError(
                f"the credential key file {str(self.path)!r} is readable by others "
                f"(mode {mode:o}); run `chmod 600 {self.path}` and try again"
            )
        lines = [line.strip() for line in self.path.read_text(encoding="ascii").splitlines()]
        keys = [line.encode("ascii") for line in lines if line]
        try:
            for key in keys:
                Fernet(key)
        except ValueError:
            raise ConfigError(
                f"the credential key file {str(self.path)!r} holds a line that is not a Fernet "
                "key; restore it from a backup (stored credentials cannot be read without it)"
            ) from None
        if not keys:
            raise ConfigError(
                f"the credential key file {str(self.path)!r} is empty; restore it from a backup "
                "or remove it together with every stored credential"
            )
        return keys

    def cipher(self) -> MultiFernet:
        """Encrypts with the newest key, decrypts with any."""
        from cryptography.fernet import Fernet, MultiFernet

        return MultiFernet([Fernet(key) for key in self.keys()])

    def begin_rotation(self) -> MultiFernet:
        """Put a fresh key in front of the current ones and return the cipher of them all."""
        from cryptography.fernet import Fernet, MultiFernet

        keys = [Fernet.generate_key(), *self.keys()]
        self._write(keys)
        return MultiFernet([Fernet(key) for key in keys])

    def finish_rotation(self) -> None:
        """Keep only the newest key (call once every row is encrypted with it)."""
        self._write(self.keys()[:1])

    def _write(self, keys: list[bytes]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # The temporary file is made 0600 before the key is in it: never readable by others.
        text = "".join(k.decode("ascii") + "\n" for k in keys)
        write_text_atomically(self.path.parent, self.path, text)
        os.chmod(self.path, 0o600)
