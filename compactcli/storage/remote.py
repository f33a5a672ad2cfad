"""Transcripts named by fsspec URLs (s3://, gs://, az://, file://): finding, reading and writing them.

Object stores have no atomic rename and no locks, so nothing here rewrites a file in place: a URL is
read (spooled to a local temp file, since the commands read their input twice and seek), and written
only as a new object under --output-dir. Credentials come from each filesystem's usual chain (for
S3: AWS_* variables, ~/.aws, instance roles; AWS_ENDPOINT_URL for an S3-compatible server); nothing
here takes or prints one. fsspec is imported only when a URL is used (docs/design.md, "Many machines").
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from compactcli.core import errors

_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
# The extra that brings each protocol's fsspec implementation.
EXTRAS = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
    "adl": "azure",
}
_SECRET_NAME = re.compile(
    r"SECRET|TOKEN|PASSWORD|CREDENTIAL|ACCOUNT_KEY|SAS|CONNECTION_STRING", re.IGNORECASE
)
# The secret parts of an Azure connection string, which a message may quote without the rest of it.
_SECRET_PART = re.compile(r"(AccountKey|SharedAccessSignature|SharedAccessKey)=([^;\s]+)", re.IGNORECASE)
ARCHIVE_DIR_NAME = ".transcripts"
COPY_CHUNK = 1 << 20


def is_url(path: str) -> bool:
    return bool(_URL.match(path))


def protocol(url: str) -> str:
    return url.split("://", 1)[0].lower()


def install_hint(url: str) -> str:
    extra = EXTRAS.get(protocol(url))
    if extra:
        return f"{protocol(url)}:// URLs need pip install 'compactcli[{extra}]'"
    return f"{protocol(url)}:// URLs need fsspec and its implementation for {protocol(url)}"


def filesystem(url: str):
    """(fsspec filesystem, path within it) for a URL; a missing implementation is a usage error."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise errors.CompactError(install_hint(url), errors.USAGE) from None
    try:
        return url_to_fs(url)
    except (ImportError, ValueError) as exc:
        if isinstance(exc, ValueError) and "Protocol not known" not in str(exc):
            raise errors.CompactError(f"{url}: {exc}", errors.USAGE) from None
        raise errors.CompactError(install_hint(url), errors.USAGE) from None


DOT_SEGMENTS = (".", "..")


def discover(url: str, glob: str) -> list[str]:
    """The transcripts a URL names: itself if it is a file, else the files under it matching `glob`.

    As in local folders, archive folders and names starting with a dot are skipped.
    """
    fs, root = filesystem(url)
    try:
        if fs.isfile(root):
            return [url]
        found = fs.find(root)
    except FileNotFoundError:  # a bucket that does not exist (s3fs, gcsfs; adlfs finds nothing)
        found = []
    except Exception as exc:  # each filesystem raises its own errors for no access or no server
        raise errors.CompactError(f"{url}: cannot list: {_reason(exc)}") from None
    if not found:  # as for a local path that does not exist: a usage error
        raise errors.CompactError(f"{url}: no such file or folder", errors.USAGE)
    prefix = root.rstrip("/")
    relatives = []
    for path in found:
        # A key is a name, not a path: `a//b` and `c/../d` are keys of their own, processed as they are
        # (PurePosixPath would fold `//` into another key, and `..` read as a dot name was skipped unsaid).
        relative = path[len(prefix) :]
        parts = tuple((relative[1:] if relative.startswith("/") else relative).split("/"))
        if any(
            part == ARCHIVE_DIR_NAME or (part.startswith(".") and part not in DOT_SEGMENTS) for part in parts
        ):
            continue
        if fnmatch.fnmatchcase(parts[-1], glob):
            relatives.append(parts)
    return [_join(url, "/".join(parts)) for parts in sorted(relatives, key=_walk_order)]


def _walk_order(parts: tuple[str, ...]) -> tuple:
    """The order of the local folder walk: a folder's files by name, then its sub-folders by name."""
    return (*((1, folder) for folder in parts[:-1]), (0, parts[-1]))


def _join(base: str, relative: str) -> str:
    return f"{base.rstrip('/')}/{relative}" if relative else base


@contextmanager
def open_spooled(url: str) -> Iterator[BinaryIO]:
    """The object copied to a local temp file (seekable, read twice), memory bounded by COPY_CHUNK."""
    fs, path = filesystem(url)
    with tempfile.TemporaryFile(prefix="compactcli-remote-") as spool:
        with _failing_as(url, "read"), fs.open(path, "rb") as remote:
            shutil.copyfileobj(remote, spool, COPY_CHUNK)
        spool.seek(0)
        yield spool


def upload(local: str, url: str) -> None:
    """Put a finished local file at `url` as one object (readers never see it half-written)."""
    fs, path = filesystem(url)
    with _failing_as(url, "write"):
        fs.put_file(local, path)


def read_bytes(url: str) -> bytes | None:
    """A small object's content, or None if there is none."""
    fs, path = filesystem(url)
    if not fs.exists(path):
        return None
    with _failing_as(url, "read"):
        return fs.cat_file(path)


def write_bytes(url: str, data: bytes) -> None:
    fs, path = filesystem(url)
    with _failing_as(url, "write"):
        fs.pipe_file(path, data)


@contextmanager
def _failing_as(url: str, action: str) -> Iterator[None]:
    """Each filesystem raises errors of its own (botocore's, azure's...): one CompactError naming the URL."""
    try:
        yield
    except FileNotFoundError:
        raise errors.CompactError(f"{url}: no such file") from None
    except Exception as exc:
        raise errors.CompactError(f"{url}: cannot {action}: {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    """What went wrong, in one line, with any secret from the environment masked."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    for name, value in os.environ.items():
        if _SECRET_NAME.search(name) and len(value) >= 8:
            text = text.replace(value, "***")
            for part in _SECRET_PART.finditer(value):
                text = text.replace(part.group(2), "***")
    text = _SECRET_PART.sub(r"\1=***", text)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
