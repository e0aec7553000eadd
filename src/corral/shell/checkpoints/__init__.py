"""Checkpoints: what a call changed under a writable source, and the way back.

Before a call that may write, :func:`take_snapshot` scans the source (lstat of every
entry) and keeps the content of each regular file in a content-addressed blob store,
copying only files whose inode, size, mtime or ctime moved since the last snapshot.
After the call, :func:`changes` scans again and returns a :class:`Checkpoint`: the prior
state (content, mode, link target, or absence) of every path the call created, changed,
removed, renamed or chmodded. :func:`restore` puts paths back as they were before a run
of checkpoints. The mechanism was chosen by ``bench/checkpoints.py``.
"""

from corral.shell.checkpoints.blobs import BlobStore
from corral.shell.checkpoints.capture import (
    Checkpoint,
    Prior,
    Snapshot,
    TooManyEntries,
    changes,
    take_snapshot,
)
from corral.shell.checkpoints.restore import restore
from corral.shell.checkpoints.scan import Entry, scan

__all__ = [
    "BlobStore",
    "Checkpoint",
    "Entry",
    "Prior",
    "Snapshot",
    "TooManyEntries",
    "changes",
    "restore",
    "scan",
    "take_snapshot",
]
