"""Writers holding a file open: a read lease, else a look through /proc."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import tempfile
from pathlib import Path

from compactcli.core.errors import Busy


class _NoWriters:
    """Busy if another process holds ``target`` open for writing, from now until the replacement.

    Such a writer (an agent keeping its transcript open) would go on appending to the replaced
    inode after the replacement, and those lines would be lost (with an archive link, they would
    land in the archive). Where the file system grants it (Linux, the file's owner or CAP_LEASE), a
    read lease answers in one call, whatever the number of processes: the kernel refuses it while
    any process has the file open for writing (a writable mapping too, and processes /proc does
    not show us). Held until the replacement, it also makes an open for writing by anyone else
    wait, and tells us: `still()` just before the rename refuses the file then. What is left is the
    time between that check and the rename, two system calls; the writer that opens then waits
    for `close()` and writes to the old inode.

    Without a lease (another file system, another owner, no fcntl leases), the open files in /proc
    are looked through (``open_writer``), once, here: an unprivileged user sees only their own
    processes, which is where such a writer runs. Without /proc either, nothing is checked.
    """

    def __init__(self, target: Path, real: Path, st: os.stat_result) -> None:
        self.target = target
        self._fd: int | None = None
        try:
            self._fd = _read_lease(real, st)
        except BlockingIOError:
            self._refuse(open_writer(st))
            raise Busy(f"{target}: busy: another process holds it open for writing") from None
        except OSError:
            self._fd = None
        if self._fd is None:
            self._refuse(open_writer(st))

    def _refuse(self, writer: int | None) -> None:
        if writer is not None:
            raise Busy(
                f"{self.target}: busy: process {writer} holds it open for writing; its appends would be lost"
            )

    def still(self) -> None:
        """Busy if, since the check, another process has begun opening the file for writing."""
        if self._fd is not None and fcntl.fcntl(self._fd, fcntl.F_GETLEASE) != fcntl.F_RDLCK:
            raise Busy(f"{self.target}: busy: another process opened it for writing meanwhile")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # the lease goes with it
            self._fd = None


def _read_lease_available(folder: Path) -> bool:
    """Whether a file made in ``folder`` can be leased (for tests and diagnostics)."""
    probe = Path(tempfile.mkdtemp(dir=folder)) / "lease"
    try:
        probe.write_bytes(b"")
        fd = _read_lease(probe, os.stat(probe))
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
            probe.parent.rmdir()
    if fd is None:
        return False
    os.close(fd)
    return True


def _read_lease(real: Path, st: os.stat_result) -> int | None:
    """A descriptor of the file of ``st`` holding a read lease on it; None where leases are not to be
    had. BlockingIOError: a process holds the file open for writing (or a lease of its own)."""
    set_lease = getattr(fcntl, "F_SETLEASE", None)
    if set_lease is None:
        return None
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        if (os.fstat(fd).st_ino, os.fstat(fd).st_dev) != (st.st_ino, st.st_dev):
            raise Busy(f"{real}: busy: changed while it was processed")
        # A lease break is told by a signal, SIGIO unless set: its default is to end the process.
        # SIGURG's default is to ignore it; still() asks the lease instead.
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, set_lease, fcntl.F_RDLCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_writer(st: os.stat_result) -> int | None:
    """The id of another process holding the file of ``st`` open for writing, if any."""
    me = os.getpid()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        if pid == me:
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue  # gone, or another user's
        for fd in fds:
            try:
                fst = os.stat(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if (fst.st_ino, fst.st_dev) != (st.st_ino, st.st_dev):
                continue
            if _open_for_writing(f"/proc/{pid}/fdinfo/{fd}"):
                return pid
    return None


def _open_for_writing(fdinfo: str) -> bool:
    try:
        with open(fdinfo, encoding="ascii") as f:
            for line in f:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    except (OSError, ValueError):
        pass
    return False
