"""Pure pieces: bounded buffers and the sandbox's mount plan."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from corral.shell.capture import HeadBuffer, TailBuffer
from corral.shell.sandbox import BoundSource, SandboxFiles, plan_mounts


@given(st.lists(st.text(max_size=50), max_size=40), st.integers(min_value=0, max_value=120))
def test_tail_buffer_keeps_exactly_the_newest_characters(chunks: list[str], limit: int) -> None:
    tail, head = TailBuffer(limit), HeadBuffer(limit)
    for chunk in chunks:
        tail.append(chunk)
        head.append(chunk)
        assert len(tail) <= limit
    whole = "".join(chunks)
    assert tail.text(whole_lines=False) == (whole[-limit:] if limit else "")
    assert head.text() == whole[:limit]
    assert tail.total == len(whole) and tail.dropped == max(0, len(whole) - limit)
    kept = tail.text()
    assert whole.endswith(kept) and tail.trimmed() == len(whole) - len(kept)


def _files(tmp_path: Path) -> SandboxFiles:
    return SandboxFiles.write(tmp_path / "etc")


def test_mounts_apply_parents_before_children_and_masks_last(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "drive").mkdir(parents=True)
    (data / "private").mkdir()
    (data / "corral.db").write_text("")
    sources = [
        BoundSource(name="drive", root=str(data / "drive"), writable=True),
        BoundSource(name="all", root=str(tmp_path), writable=False),
    ]
    mounts = plan_mounts(
        _files(tmp_path),
        sources,
        data_dir=str(data),
        protected=[str(data / "private"), str(data / "corral.db")],
        network=False,
    )
    order = [(m.kind, m.dest) for m in mounts]
    at = {item: index for index, item in enumerate(order)}
    assert at[("ro", str(tmp_path))] < at[("tmpfs", str(data))] < at[("rw", str(data / "drive"))]
    assert order[-1] == ("remount_ro", str(data))
    # Inside the hidden data folder nothing re-exposes the protected files: no extra masks.
    assert ("tmpfs", str(data / "private")) not in at and (
        "mask_file",
        str(data / "corral.db"),
    ) not in at
    assert at[("tmpfs", "/tmp")] < at[("dir", "/tmp/home")]
    assert ("ro", "/etc/resolv.conf") not in at


def test_a_source_inside_the_data_folder_gets_its_protected_files_masked(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "private").mkdir(parents=True)
    (data / "corral.db").write_text("")
    mounts = plan_mounts(
        _files(tmp_path),
        [BoundSource(name="oops", root=str(data), writable=True)],
        data_dir=str(data),
        protected=[str(data / "private"), str(data / "corral.db")],
        network=True,
    )
    kinds = {(m.kind, m.dest) for m in mounts}
    assert ("tmpfs", str(data)) in kinds  # the data folder itself is hidden first
    assert ("tmpfs", str(data / "private")) in kinds
    assert ("mask_file", str(data / "corral.db")) in kinds
