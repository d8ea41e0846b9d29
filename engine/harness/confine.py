"""Confinement the harness adds inside the container: the check's user, the subreaper, and
a seccomp filter (all through ``prctl``; the container's own settings do the rest)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys

#: The image's unprivileged user (Dockerfile: ``useradd --uid 10001``), a check's process's.
CHECK_UID = CHECK_GID = 10001


def drop_to_check_user() -> None:
    """In a child, before any check code: become the check's user if the parent is root.

    Under gVisor the parent runs as root inside the sandbox (the host's container options)
    so that the check, as another uid, can neither open the parent's descriptors through
    /proc (gVisor's procfs ignores non-dumpable there), nor signal it.
    Under runc the whole container already runs as the check's user and this does nothing.
    """
    if os.getuid() != 0:
        return
    os.setgroups([])
    os.setgid(CHECK_GID)
    os.setuid(CHECK_UID)
    if os.getuid() == 0 or os.geteuid() == 0:  # never run a check as root
        os._exit(71)


def become_subreaper() -> None:
    """PR_SET_CHILD_SUBREAPER: a job's orphans become our children, so reset() can reap them."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)


def make_undumpable() -> None:
    """PR_SET_DUMPABLE 0: a check cannot ptrace the parent or open its /proc/<pid>/fd."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)


#: io_uring_setup, io_uring_enter, io_uring_register: 425-427 on x86_64, i386, aarch64, arm.
IO_URING_SYSCALLS = (425, 427)
_ENOSYS = 38


def deny_io_uring() -> None:
    """A seccomp filter on top of Docker's profile: io_uring_* fail with ENOSYS, for good.

    Docker before 25 allows io_uring in its default profile, which would put the host
    kernel's io_uring in reach of user code under runc. The filter is inherited by
    every check process and can never be removed. Without it the harness refuses to run.
    """
    first, last = IO_URING_SYSCALLS
    # struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}: the syscall number, minus the
    # x32 bit; 425 <= nr <= 427 -> SECCOMP_RET_ERRNO | ENOSYS, else SECCOMP_RET_ALLOW.
    program = [
        (0x20, 0, 0, 0),  # BPF_LD | BPF_W | BPF_ABS: seccomp_data.nr
        (0x54, 0, 0, 0xBFFFFFFF),  # BPF_ALU | BPF_AND | BPF_K: drop __X32_SYSCALL_BIT
        (0x35, 0, 2, first),  # BPF_JMP | BPF_JGE | BPF_K
        (0x25, 1, 0, last),  # BPF_JMP | BPF_JGT | BPF_K
        (0x06, 0, 0, 0x00050000 | _ENOSYS),  # BPF_RET: SECCOMP_RET_ERRNO | ENOSYS
        (0x06, 0, 0, 0x7FFF0000),  # BPF_RET: SECCOMP_RET_ALLOW
    ]

    class SockFilter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_uint16),
            ("jt", ctypes.c_uint8),
            ("jf", ctypes.c_uint8),
            ("k", ctypes.c_uint32),
        ]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    filters = (SockFilter * len(program))(*(SockFilter(*op) for op in program))
    fprog = SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS (Docker's no-new-privileges set it too)
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, MODE_FILTER
        errno = ctypes.get_errno()
        sys.stderr.write(f"harness: cannot install the io_uring seccomp filter: errno {errno}\n")
        os._exit(72)
