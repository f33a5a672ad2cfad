"""What each file looked like when it was last processed, so that a re-run skips unchanged files unread.

A cron job runs `compactcli micro` over the same folders again and again; most files have not changed
since the last run. For those, reading and parsing them again only repeats an answer already known.

What is remembered, per file (by absolute path): its size, mtime_ns, inode, ctime_ns and device when it
was read, and the outcome the command reached. An entry is used only when all five still match; any
write, append, truncation, `touch`, chmod or replacement through rename changes at least one of them
(ctime cannot be set back by a writer: `touch -d` and `rsync -t` set mtime, and ctime becomes now).

The one blind spot of stat-based caches is a same-size rewrite within one timestamp tick of the last
read: size and times come out the same. It is bounded by never remembering a file whose ctime is less
than SETTLE_SECONDS before the read began: any later change then happens at least one tick after the
remembered ctime, so it gets another ctime. SETTLE_SECONDS (2 s) covers the coarsest timestamps in use
(FAT's 2 s) and the kernel's coarse clock; it assumes the file system's clock is within that of ours.

Entries live in one file per command, options and code version, under the user's cache directory
($XDG_CACHE_HOME/compactcli, else ~/.cache/compactcli), never beside transcripts: a new version, other
options or an edited install start an empty cache. The file holds that scope in full and is used only
when it matches: its name (a CRC of the scope; zlib loads faster than hashlib) only spreads the scopes
over files, so two scopes whose names collide cost reads, never one's answer given for the other.
`--no-cache` neither reads nor writes it. Losing the cache (deleted, unreadable, two runs saving at
once) costs only reads, never a wrong answer.
"""

from __future__ import annotations

import contextlib
import gc
import os
import stat
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from compactcli import __version__
from compactcli.core.constants import STDIN
from compactcli.core.places import cache_dir
from compactcli.report import Outcome

SETTLE_SECONDS = 2.0
MAX_ENTRIES = 100_000  # the oldest are dropped first
STALE_DAYS = 30  # cache files of other options or versions not used for this long are removed
_FILE_PREFIX = "seen-"
_FORMAT = 2  # 2: the file holds its scope

Stamp = tuple[int, int, int, int, int]  # size, mtime_ns, inode, ctime_ns, device


def stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns, st.st_dev)


def _code_version() -> str:
    """The version plus the size and mtime of every module, so an edited install never reuses answers."""
    package = Path(__file__).parent.parent  # compactcli/, not this module's run/
    parts = [__version__]
    for folder, _, names in sorted(os.walk(package)):
        for name in sorted(names):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                parts.append(f"{folder[len(str(package)) :]}/{name}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(parts)


@dataclass
class Observed:
    """A worker that also notes what its file looked like, when the outcome may be remembered.

    Picklable (a module-level class), so it can go to --jobs worker processes as it is.
    """

    worker: Callable[[str], Outcome]
    remembers: frozenset[str]  # statuses whose outcome depends only on the file's bytes and the options

    def __call__(self, item: str) -> Outcome:
        if item == STDIN:
            return self.worker(item)
        started = time.time()
        try:
            before = os.stat(item)
        except OSError:
            return self.worker(item)  # the worker reports it
        outcome = self.worker(item)
        if outcome.status not in self.remembers or not stat.S_ISREG(before.st_mode):
            return outcome
        if started - before.st_ctime_ns / 1e9 < SETTLE_SECONDS:
            return outcome  # changed too recently: a change within the same tick would go unseen
        try:
            after = os.stat(item)
        except OSError:
            return outcome
        if stamp_of(after) == stamp_of(before):
            outcome.stamp = stamp_of(before)
        return outcome


@dataclass
class RunCache:
    """The remembered outcomes of one command with one set of options (None path: disabled)."""

    path: Path | None
    scope: str = ""  # what the entries depend on besides the files (command, options, code); in the file
    remembers: frozenset[str] = frozenset()  # statuses that depend only on the file's bytes and options
    min_age: float = 0.0  # the command's --min-age: a file that young is the worker's to report
    _entries: dict[str, list] = field(default_factory=dict)
    _dirty: bool = False

    @classmethod
    def open(
        cls,
        command: str,
        options: dict,
        remembers: Iterable[str],
        *,
        enabled: bool = True,
        min_age: float = 0.0,
    ) -> RunCache:
        """The cache of `command` run with `options` (every option that can change an outcome)."""
        if not enabled:
            return cls(None)
        scope = orjson.dumps(
            {"format": _FORMAT, "command": command, "options": options, "code": _code_version()},
            option=orjson.OPT_SORT_KEYS,
            default=sorted,  # frozensets of option values
        )
        name = f"{_FILE_PREFIX}{command}-{zlib.crc32(scope):08x}.json"
        cache = cls(cache_dir() / name, scope.decode(), frozenset(remembers), min_age)
        cache._load()
        return cache

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def _load(self) -> None:
        assert self.path is not None
        try:
            with _no_cycle_collection():
                data = orjson.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return
        if (
            isinstance(data, dict)
            and data.get("scope") == self.scope
            and isinstance(data.get("entries"), dict)
        ):
            self._entries = data["entries"]

    def known(self, items: Iterable[str]) -> dict[int, Outcome]:
        """Index -> remembered outcome, for the items the cache can answer: those whose file is exactly
        as it was when remembered (one stat each; an item without an entry is not even stat-ed)."""
        found: dict[int, Outcome] = {}
        if self.path is None:
            return found
        entries = self._entries
        oldest = time.time() - self.min_age if self.min_age else None
        here = os.path.join(os.getcwd(), "")
        with _no_cycle_collection():
            for index, item in enumerate(items):
                if item == STDIN:
                    continue
                entry = entries.get(_absolute(item, here))
                if entry is None:
                    continue
                try:
                    st = os.stat(item)
                except OSError:
                    continue
                # A list, as the entry's stamp was loaded: no tuple made per item.
                if [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns, st.st_dev] != entry[0]:
                    continue
                if oldest is not None and st.st_mtime > oldest:
                    continue  # younger than --min-age: the worker's to report
                status, exit_code, message, stats = entry[1]
                found[index] = Outcome(item, status, exit_code, message, dict(stats))
        return found

    def remember(self, outcome: Outcome) -> None:
        if self.path is None or outcome.stamp is None or outcome.status not in self.remembers:
            return
        key = os.path.abspath(outcome.path)
        self._entries.pop(key, None)  # re-inserted last: the newest are kept longest
        self._entries[key] = [
            list(outcome.stamp),  # as loaded from the file (known() compares lists)
            [outcome.status, outcome.exit_code, outcome.message, outcome.stats],
        ]
        self._dirty = True

    def save(self) -> None:
        """Write the entries back (merged with what another run saved meanwhile); never fails the run."""
        if self.path is None or not self._dirty:
            return
        with contextlib.suppress(OSError, ValueError):
            self._save(self.path)

    def _save(self, path: Path) -> None:
        mine = self._entries
        self._entries = {}
        self._load()  # another run may have saved since we loaded
        merged = self._entries
        for key, entry in mine.items():
            merged.pop(key, None)
            merged[key] = entry
        while len(merged) > MAX_ENTRIES:
            del merged[next(iter(merged))]
        folder = path.parent
        import tempfile  # only a run that remembers something new writes the cache

        folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # it names the user's files
        fd, temp = tempfile.mkstemp(prefix=".seen-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(orjson.dumps({"format": _FORMAT, "scope": self.scope, "entries": merged}))
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        self._dirty = False
        _remove_stale(folder, keep=path)


def _absolute(item: str, here: str) -> str:
    """os.path.abspath(item), `here` being the current folder with a slash at the end. The items
    discovery makes from a plain folder name are normal already: they skip normpath (thousands of
    calls in a cron run)."""
    if not item or "/." in item or "//" in item or item[:1] == "." or item[-1:] == "/":
        return os.path.normpath(item if item[:1] == "/" else here + item)
    return item if item[:1] == "/" else here + item


@contextlib.contextmanager
def _no_cycle_collection():
    """Thousands of small lists, dicts and outcomes, none in a cycle: the cycle collector's passes
    over them (several per load of a large cache) would find nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _remove_stale(folder: Path, keep: Path) -> None:
    """Cache files of options or versions nobody has used for STALE_DAYS."""
    cutoff = time.time() - STALE_DAYS * 86400
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(_FILE_PREFIX) and entry.path != str(keep):
                with contextlib.suppress(OSError):
                    if entry.stat().st_mtime < cutoff:
                        os.unlink(entry.path)
