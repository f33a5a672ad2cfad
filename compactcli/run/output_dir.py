"""--output-dir: each result written under a folder or URL with the inputs' relative layout; originals stay.

This is how writing commands work on object stores, which have no atomic rename and no locks, so a
transcript there is never rewritten in place: the result is finished in a local temp file and put as
one new object (readers never see half of it). A manifest at the output root (MANIFEST_NAME, a dot file
so that the next run over the output does not read it as a transcript) says what came from where; it is
written once, by the command, after the run (docs/design.md, "Many machines").
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from compactcli import __version__
from compactcli.core import errors
from compactcli.pipelines.transcript import STDIN, open_input
from compactcli.report import CHANGED, UNCHANGED, Outcome
from compactcli.run.rewrite import Analyze, Edit, FileSettings, process_open
from compactcli.storage import remote

MANIFEST_NAME = ".compactcli-manifest.jsonl"
_CHUNK = 1 << 20


def relative_name(item: str, roots: Sequence[str]) -> str:
    """Where `item` goes under the output root: its path below the given folder, or its file name."""
    for root in roots:
        base = root.rstrip("/")
        if item != base and item.startswith(base + "/"):
            return item[len(base) + 1 :]
    return PurePosixPath(item.rstrip("/")).name


def destination(output_dir: str, relative: str) -> str:
    if remote.is_url(output_dir):
        return f"{output_dir.rstrip('/')}/{relative}"
    return str(Path(output_dir) / relative)


def check_layout(items: Sequence[str], roots: Sequence[str]) -> str | None:
    """A usage problem with writing these items under one root, or None."""
    if STDIN in items:
        return "--output-dir takes files and folders, not '-' (stdin)"
    seen: dict[str, str] = {}
    for item in items:
        name = relative_name(item, roots)
        if name in seen:
            return f"--output-dir: {seen[name]} and {item} would both be written as {name}"
        seen[name] = item
    return None


def process(
    item: str, *, settings: FileSettings, analyze: Analyze, output_dir: str, roots: Sequence[str]
) -> Outcome:
    """One input (a local path or a URL) to its place under `output_dir`, or a preview of it."""
    relative = relative_name(item, roots)
    if any(part in remote.DOT_SEGMENTS for part in relative.split("/")):
        # An object key may hold `..`; as a path below the output root it would point elsewhere.
        raise errors.CompactError(
            f"{item}: the key has a '.' or '..' segment; not written under --output-dir, where it "
            "would name a place outside its own"
        )
    dest = destination(output_dir, relative)
    with ExitStack() as stack:
        source, name = stack.enter_context(open_input(item))
        if remote.is_url(dest):
            local = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="compactcli-out-"))) / "out"
        else:
            local = Path(dest)
            local.parent.mkdir(parents=True, exist_ok=True)
        outcome = process_open(
            name, source, replace(settings, output=str(local)), _original_stays(analyze, item)
        )
        # A failed outcome (an edit refused by its gate) wrote nothing: there is nothing to put or hash.
        failed = outcome.exit_code != errors.OK
        if (
            outcome.status not in (CHANGED, UNCHANGED)
            or failed
            or settings.check
            or settings.diff
            or settings.dry_run
        ):
            return outcome
        if remote.is_url(dest):
            remote.upload(str(local), dest)
        source.seek(0)
        outcome.stats.update(
            output=dest,
            sha256_before=_sha256(source),
            sha256_after=_sha256_file(local),
            bytes_before=source.tell(),
        )
    return outcome


def _original_stays(analyze: Analyze, item: str) -> Analyze:
    """An edit whose new content names the archive of the original (summarize) names the original
    itself: under --output-dir it stays where it is, so no archive copy is made."""

    def analyze_in_place_of_archive(source: BinaryIO, name: str) -> Edit:
        edit = analyze(source, name)
        if getattr(edit, "archive_first", False):
            edit.archive_first = False  # type: ignore[attr-defined]
            edit.use_archive(item if remote.is_url(item) else os.path.abspath(item))  # type: ignore[attr-defined]
        return edit

    return analyze_in_place_of_archive


def _sha256(source: BinaryIO) -> str:
    digest = hashlib.sha256()
    while chunk := source.read(_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return _sha256(f)


def write_manifest(output_dir: str, outcomes: Iterable[Outcome], command: str, options: dict) -> None:
    """Add a line per written file to the manifest at the output root (read, extended, written whole:
    an object store cannot append)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lines = [
        json.dumps(
            {
                "source": outcome.path,
                "output": outcome.stats["output"],
                "sha256_before": outcome.stats["sha256_before"],
                "size_before": outcome.stats["bytes_before"],
                "sha256_after": outcome.stats["sha256_after"],
                "size_after": outcome.stats["bytes_after"],
                "command": command,
                "options": options,
                "version": __version__,
                "time": now,
            },
            ensure_ascii=True,
        ).encode()
        + b"\n"
        for outcome in outcomes
        if "output" in outcome.stats
    ]
    if not lines:
        return
    target = destination(output_dir, MANIFEST_NAME)
    try:
        if remote.is_url(output_dir):
            before = remote.read_bytes(target) or b""
            remote.write_bytes(target, _ended(before) + b"".join(lines))
        else:
            Path(output_dir).mkdir(parents=True, exist_ok=True)
            # It names every transcript and its hashes: created private, as the archive manifest is.
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            with open(fd, "ab") as manifest:
                manifest.write(b"".join(lines))
    except OSError as exc:
        raise errors.CompactError(f"{target}: cannot write the manifest: {exc.strerror or exc}") from None


def _ended(data: bytes) -> bytes:
    """Earlier lines, ending in a newline even if a crash tore the last one."""
    return data if not data or data.endswith(b"\n") else data + b"\n"
