"""Every way we know to leave a set-id (or device) file behind, tried from inside a sandbox.

Run as ``python3 set_id_files.py SETUID_HOST_BINARY`` in a writable source; prints one
``name outcome`` row per attempt. The test then judges the host inodes, not these rows.
"""

import ctypes
import errno
import io
import os
import shutil
import subprocess
import sys
import tarfile

libc = ctypes.CDLL(None, use_errno=True)
host_setuid = sys.argv[1]


def outcome(call):
    try:
        result = call()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "ok" if result is None else str(result)


def shell(command):
    done = subprocess.run(command, shell=True, capture_output=True, check=False)
    return "ok" if done.returncode == 0 else f"exit{done.returncode}"


def touch(name):
    with open(name, "w") as handle:
        handle.write("#!/bin/sh\n")
    return name


def openat2(name):
    how = (ctypes.c_uint64 * 3)(os.O_CREAT | os.O_WRONLY, 0o4755, 0)
    nr = {"x86_64": 437, "aarch64": 437}[os.uname().machine]
    if libc.syscall(nr, -100, name.encode(), how, ctypes.sizeof(how)) == -1:
        return errno.errorcode[ctypes.get_errno()]
    return "ok"


def tar_setuid():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        entry = tarfile.TarInfo("tarred")
        entry.mode = 0o4755
        entry.size = 3
        archive.addfile(entry, io.BytesIO(b"sh\n"))
    with open("setuid.tar", "wb") as handle:
        handle.write(buffer.getvalue())
    return shell("tar -xpf setuid.tar")


def setgid_dir():
    os.mkdir("shared")
    os.chmod("shared", 0o2775)


capability = bytes.fromhex("0000000201000000000000000000000000000000")  # v2, cap_chown
attempts = {
    "cp_chmod_4755": lambda: shell("cp /bin/sh ./suid-sh && chmod 4755 ./suid-sh"),
    "chmod_u+s": lambda: shell("cp /bin/sh ./suid-2 && chmod u+s,g+s ./suid-2"),
    "os_chmod": lambda: os.chmod(touch("py-chmod"), 0o4755),
    "os_fchmod": lambda: os.fchmod(os.open(touch("py-fchmod"), os.O_RDONLY), 0o2755),
    "open_creat_4755": lambda: os.close(os.open("py-open", os.O_CREAT | os.O_WRONLY, 0o4755)),
    "openat2_4755": lambda: openat2("py-openat2"),
    "install_m_4755": lambda: shell("install -m 4755 /bin/true ./installed"),
    "cp_p_setuid": lambda: shell(f"cp -p {host_setuid} ./copied"),
    "tar_xp_setuid": tar_setuid,
    "setgid_dir": setgid_dir,
    "mkdir_2775": lambda: os.mkdir("mkdir-sgid", 0o2775),
    "mknod_char": lambda: os.mknod("null-dev", 0o20666, os.makedev(1, 3)),
    "mknod_setuid": lambda: os.mknod("mknod-suid", 0o104755),
    "hard_link_setuid": lambda: os.link(host_setuid, "linked"),
    "file_capability": lambda: os.setxattr(touch("capped"), "security.capability", capability),
    "shutil_copy2": lambda: shutil.copy2(host_setuid, "copy2"),
}
for name, attempt in attempts.items():
    print(name, outcome(attempt), flush=True)
