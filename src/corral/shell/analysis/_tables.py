"""The lists the rules judge by. Names are basenames, compared after quote removal."""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = [
    "BLOCKED",
    "BLOCKED_PREFIXES",
    "COMMAND_VARS",
    "CRITICAL_TREES",
    "HIJACK_PREFIXES",
    "HIJACK_VARS",
    "INTERPRETERS",
    "RESERVED",
    "SAFE_DEVICES",
    "SHELLS",
    "SYSTEMCTL_POWER",
    "SYSTEM_PROGRAM_DIRS",
    "UNCONFINED_HIJACK_PREFIXES",
    "UNCONFINED_HIJACK_VARS",
    "WRITE_DIR_VARS",
    "is_block_device",
    "is_interpreter",
]

# Privilege changes, power state, kernel modules, mounts, disks and namespaces: never what
# an agent inside a sandbox should run, and the first thing a hijacked one would try.
BLOCKED = frozenset(
    {
        # privilege
        "sudo", "su", "doas", "pkexec", "sudoedit", "run0", "runuser", "setpriv", "capsh",
        "chroot", "unshare", "nsenter", "pivot_root", "systemd-run", "machinectl",
        "newgrp", "sg", "setcap", "visudo", "vipw", "vigr",
        # accounts
        "passwd", "chpasswd", "useradd", "userdel", "usermod", "groupadd", "groupdel",
        "groupmod", "adduser", "deluser", "chsh", "chfn",
        # power and init
        "shutdown", "reboot", "halt", "poweroff", "init", "telinit", "kexec", "killall5",
        # kernel
        "insmod", "rmmod", "modprobe", "depmod", "sysctl",
        # mounts and swap
        "mount", "umount", "swapon", "swapoff", "losetup",
        # disks and file systems
        "fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted", "partprobe", "wipefs",
        "blkdiscard", "mke2fs", "mkswap", "mkdosfs", "mkntfs", "tune2fs", "debugfs",
        "e2fsck", "resize2fs", "hdparm", "cryptsetup", "dmsetup", "mdadm", "kpartx",
        "pvcreate", "pvremove", "vgcreate", "vgremove", "lvcreate", "lvremove",
        # firewall
        "iptables", "ip6tables", "nft", "ebtables",
        # clock, firmware, network daemons, schedules outside the command
        "hwclock", "rtcwake", "ntpdate", "efibootmgr", "ifup", "ifdown", "dhclient", "at",
        "batch", "atrm", "kmod",
        # volume managers
        "zpool", "zfs", "lvm", "lvchange", "lvextend", "lvreduce", "lvresize", "lvrename",
        "lvconvert", "vgchange", "vgextend", "vgreduce", "vgrename", "vgmerge", "vgsplit",
        "vgexport", "vgimport", "pvmove", "pvresize", "pvchange",
    }
)  # fmt: skip
BLOCKED_PREFIXES = ("mkfs", "fsck")

# Verbs of systemctl/loginctl that change the machine's power state or target.
SYSTEMCTL_POWER = frozenset(
    {
        "poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep",
        "suspend-then-hibernate", "emergency", "rescue", "isolate", "default", "soft-reboot",
        "switch-root",
    }
)  # fmt: skip

RESERVED = frozenset(
    {"{", "}", "]]", "then", "fi", "do", "done", "esac", "elif", "else", "in", ";;", "function"}
)

SHELLS = frozenset(
    {"bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "csh", "tcsh",
     "rbash", "ksh93", "pdksh", "oksh", "lksh"}
)  # fmt: skip

_INTERPRETER = re.compile(
    r"^(python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|deno|bun|php[0-9.]*|lua"
    r"[0-9.]*|luajit|Rscript|R|tclsh[0-9.]*|wish|awk|gawk|mawk|nawk|pwsh|osascript|irb|jshell"
    r"|julia|guile|racket|sbcl|ghci|runghc|swift|groovy|kotlin|scala|elixir|erl|escript)$"
)


@lru_cache(maxsize=512)
def is_interpreter(name: str) -> bool:
    """True for language interpreters (allowed; the sandbox is their boundary)."""
    return bool(_INTERPRETER.match(name))


INTERPRETERS = _INTERPRETER

# Assignments that make a later program load code the analysis never saw.
HIJACK_VARS = frozenset(
    {
        # dynamic linker and shell start-up
        "BASH_ENV", "ENV", "PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS3", "PS4", "SHELLOPTS",
        "BASHOPTS", "BASH_XTRACEFD", "CDPATH", "HOME", "XDG_CONFIG_HOME", "ZDOTDIR",
        "INPUTRC", "BASH_LOADABLES_PATH", "FPATH", "EXECIGNORE",
        # interpreters
        "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONBREAKPOINT",
        "PYTHONINSPECT", "PYTHONEXECUTABLE", "NODE_OPTIONS", "NODE_PATH",
        "NODE_REPL_EXTERNAL_MODULE", "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT",
        "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
        "DOTNET_STARTUP_HOOKS", "LUA_INIT", "LUA_PATH", "LUA_CPATH", "TCLLIBPATH",
        "PHPRC", "PHP_INI_SCAN_DIR", "R_PROFILE", "R_PROFILE_USER",
        # git and ssh
        "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXEC_PATH", "GIT_ASKPASS", "SSH_ASKPASS",
        "GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_TEMPLATE_DIR", "GIT_CONFIG",
        "SSH_AUTH_SOCK",
        # libraries loaded by name
        "GCONV_PATH", "OPENSSL_CONF", "OPENSSL_ENGINES", "LESSOPEN", "LESSCLOSE",
        "RUSTC_WRAPPER", "CARGO_BUILD_RUSTC_WRAPPER",
    }
)  # fmt: skip
HIJACK_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG_")

# Without the sandbox, also refused: bash's command hash and alias tables (which program
# a name runs) and the directory memory ``cd -``, ``~-`` and ``popd`` read.
# Also the settings that make an (admin-allowed) build tool load other files: extra
# makefiles, pytest plugins, npm's script shell.
UNCONFINED_HIJACK_VARS = frozenset(
    {"BASH_CMDS", "BASH_ALIASES", "OLDPWD", "DIRSTACK", "MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS",
     "MAKEFILES", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "WGETRC", "CURL_HOME", "SYSTEMWGETRC"}
)  # fmt: skip
UNCONFINED_HIJACK_PREFIXES = ("NPM_CONFIG_", "npm_config_", "CARGO_TARGET_", "TOX_")

# Variables that move where a program writes: without the sandbox their value is a path
# the command writes, checked by the gate like any other.
WRITE_DIR_VARS = frozenset(
    {
        "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES", "TMPDIR", "TMP", "TEMP", "TEMPDIR",
        "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
        "PYTHONPYCACHEPREFIX", "CARGO_HOME", "CARGO_TARGET_DIR", "GOPATH", "GOCACHE",
        "GOMODCACHE", "PIP_CACHE_DIR", "NPM_CONFIG_CACHE", "NPM_CONFIG_PREFIX",
        "npm_config_cache", "npm_config_prefix", "HISTFILE", "LESSHISTFILE", "TEXMFVAR",
    }
)  # fmt: skip

# Variables whose value a program runs as a command: allowed when that command passes.
COMMAND_VARS = frozenset(
    {"EDITOR", "VISUAL", "PAGER", "GIT_EDITOR", "GIT_PAGER", "GIT_SEQUENCE_EDITOR", "MANPAGER",
     "SYSTEMD_PAGER", "BROWSER", "SHELL", "SUDO_EDITOR", "FCEDIT"}
)  # fmt: skip

SYSTEM_PROGRAM_DIRS = (
    "/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/", "/usr/local/bin/", "/usr/local/sbin/",
    "/lib/", "/lib64/", "/lib32/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/",
)  # fmt: skip
"""Folders of installed programs and the loader: root-owned, so no project file."""

# Devices that are safe to name anywhere.
SAFE_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/stdin",
     "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/ptmx"}
)  # fmt: skip
_BLOCK_DEVICE = re.compile(
    r"^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|dm-\d|md\d|loop\d|sr\d|nbd\d"
    r"|zram\d|rbd\d|mapper/|disk/|block/|mem$|kmem$|port$|root$)"
)


def is_block_device(path: str) -> bool:
    """True for disks, partitions, raw memory and the like."""
    return bool(_BLOCK_DEVICE.match(path))


# Trees whose contents an agent never deletes or re-permissions.
CRITICAL_TREES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sbin",
    "/sys", "/usr", "/snap", "/System", "/Library", "/Applications", "/private",
)  # fmt: skip
