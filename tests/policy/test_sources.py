"""URI policies: resolution and the default rights."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corral.errors import PolicyDenied
from corral.platform import Platform
from corral.policy.sources import SourceDef, SourcePolicy


async def test_default_policy(platform: Platform, data_dir: Path) -> None:
    owner = await platform.caller()
    policy = (await platform.config.dispatch_state()).sources
    drive = data_dir / "drive"
    for access in ("read", "write", "exec"):
        assert policy.check(owner, "data://notes/x.md", access).path == drive / "notes/x.md"
    assert policy.allowed(owner, "/usr/bin/env", "read")
    assert not policy.allowed(owner, "/usr/bin/env", "write")
    for denied in ("/etc/passwd", "/root/x", "/proc/self/environ", "/home/someone/x", "/"):
        assert not policy.allowed(owner, denied, "read"), denied


async def test_member_has_no_drive_rights_by_default(platform: Platform) -> None:
    await platform.identity.create_user("mo", "member")
    member = await platform.caller("mo")
    policy = (await platform.config.dispatch_state()).sources
    assert not policy.allowed(member, "data://x", "read")
    assert policy.allowed(member, "/usr/lib", "read")


async def test_resolution_normalises_tricks(platform: Platform, data_dir: Path) -> None:
    owner = await platform.caller()
    policy = (await platform.config.dispatch_state()).sources
    drive = data_dir / "drive"
    assert policy.resolve("DATA://a/../b.md").path == drive / "b.md"
    assert policy.resolve("Data://b.md").uri == "data://b.md"
    assert policy.resolve("sub/../../drive/x").path == drive / "x"
    for trick in ("data://../corral.db", "../corral.db", "data://x/../../private/key"):
        with pytest.raises(PolicyDenied, match="platform's own data"):
            policy.check(owner, trick, "read")
    with pytest.raises(PolicyDenied, match="not covered"):
        policy.check(owner, "data://../../../etc/passwd", "read")
    with pytest.raises(PolicyDenied, match="NUL"):
        policy.check(owner, "data://a\x00b", "read")
    with pytest.raises(PolicyDenied, match="no registered source 'nope'"):
        policy.check(owner, "nope://x", "read")


async def test_symlinks_are_judged_by_their_target(platform: Platform, data_dir: Path) -> None:
    owner = await platform.caller()
    policy = (await platform.config.dispatch_state()).sources
    link = data_dir / "drive" / "escape"
    os.symlink("/etc", link)
    with pytest.raises(PolicyDenied, match="resolves to '/etc/passwd'"):
        policy.check(owner, "data://escape/passwd", "read")
    os.symlink(data_dir / "corral.db", data_dir / "drive" / "db")
    with pytest.raises(PolicyDenied, match="platform's own data"):
        policy.check(owner, "data://db", "read")


async def test_case_variants_of_protected_files_are_denied(
    platform: Platform, data_dir: Path
) -> None:
    await platform.admin.add_source("everything", str(data_dir))
    await platform.admin.grant_source(
        "everything", principal_kind="role", principal="owner", rights="rwx"
    )
    owner = await platform.caller()
    policy = (await platform.config.dispatch_state()).sources
    # a broad source cannot expose the platform's own files, in any letter case
    for target in ("everything://corral.db", "everything://CORRAL.DB", "everything://Private/x"):
        with pytest.raises(PolicyDenied, match="platform's own data"):
            policy.check(owner, target, "read")
    assert policy.allowed(owner, "everything://drive/x", "write")


async def test_grants_per_user_and_role(platform: Platform, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    await platform.admin.add_source("shared", str(shared))
    uid = await platform.identity.create_user("ann", "member")
    await platform.admin.grant_source("shared", principal_kind="user", principal=uid, rights="r")
    await platform.admin.grant_source(
        "shared", principal_kind="role", principal="member", rights="w"
    )
    await platform.identity.create_user("ben", "member")
    policy = (await platform.config.dispatch_state()).sources
    ann, ben = await platform.caller("ann"), await platform.caller("ben")
    assert policy.allowed(ann, "shared://f", "read") and policy.allowed(ann, "shared://f", "write")
    assert not policy.allowed(ben, "shared://f", "read")
    assert policy.allowed(ben, "shared://f", "write")
    assert not policy.allowed(ann, "shared://f", "exec")


@pytest.mark.parametrize("target", ["/proc/1/root", "/proc/1/cwd", "/proc/1/fd/0", "/tmp/\ud800x"])
async def test_a_path_that_cannot_be_resolved_is_a_refusal_naming_it(
    platform: Platform, target: str
) -> None:
    owner = await platform.caller()
    policy = (await platform.config.dispatch_state()).sources
    if target.startswith("/proc/1/") and os.access("/proc/1/root", os.R_OK | os.X_OK):
        pytest.skip("this machine lets the platform's user read /proc/1")
    with pytest.raises(PolicyDenied) as denied:
        policy.check(owner, target, "read")
    assert denied.value.code == "policy_denied" and repr(target) in denied.value.message
    verdict = await platform.check_command("ls", cwd=target)
    assert not verdict.allowed and verdict.rule == "unresolvable_path"
    result = await platform.call_tool("execute", {"command": "ls", "cwd": target})
    assert result.is_error and result.error_code == "policy_denied"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.text(max_size=80),
        st.lists(
            st.sampled_from(["..", ".", "~", "proc", "1", "root", "fd", "\ud800", "a", ""])
        ).map("/".join),
        st.text(alphabet="/.~:\\\x00\ud800ab", max_size=40),
    )
)
def test_no_path_string_makes_resolution_crash(target: str) -> None:
    policy = _BARE_POLICY
    try:
        resolved = policy.resolve(target)
    except PolicyDenied as denied:
        assert denied.message
    else:
        assert resolved.path.is_absolute()


_BARE_POLICY = SourcePolicy(
    [SourceDef(name="data", connector="local", root=Path("/srv/corral-test-data"))],
    data_root=Path("/srv/corral-test-data"),
    protected=[Path("/srv/corral-test-data/.corral")],
    home=Path("/srv/corral-test-home"),
)
