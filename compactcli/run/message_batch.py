"""summarize --batch: every file's summary request sent as one Message Batch (half the price), then each
result applied like a direct summary.

1. Each file is analyzed (`summarize_file.analyze`); a file that would change gets one request naming its
   path, content hash and parameters (`batch_custom_id`). A file too long for one request is summarized
   directly, in parts, at once.
2. The requests go out together (or `--batch-id` names a batch sent before); the batch is polled until it
   ends.
3. Each result is applied through `rewrite.process`, under the file's lock, only if the file is still what
   was sent; a file that changed since is reported busy.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import click

from compactcli.core.errors import BUSY as BUSY_EXIT
from compactcli.core.errors import UNAVAILABLE, Busy, Unavailable
from compactcli.pipelines.summarize_file import SummaryEdit
from compactcli.report import BUSY, FAILED, UNCHANGED, Outcome
from compactcli.run.rewrite import FileSettings, process, too_recent
from compactcli.run.runner import run_one

SummaryAnalyze = Callable[[BinaryIO, str], SummaryEdit]


@dataclass
class Pending:
    """One file's request, waiting for its result."""

    item: str
    sha256: str
    request: dict
    redactions: dict[str, int]
    previous_depth: int = 0  # of the earlier summary the request builds on (0: none)


def batch_custom_id(item: str, sha256: str, request: dict) -> str:
    """Names one file's request: its path, its content and what is asked. A file that changed since
    the batch was sent no longer matches its result (1-64 of [A-Za-z0-9_-])."""
    key = json.dumps([str(Path(item).resolve()), sha256, request["params"]], sort_keys=True, default=str)
    return "s" + hashlib.sha256(key.encode()).hexdigest()[:40]


def batch_entry(
    item: str, settings: FileSettings, analyze: SummaryAnalyze, summarizer: Any
) -> Outcome | Pending | None:
    """An outcome (nothing to send), the request to send, or None: too long for one request."""
    from compactcli.backends import anthropic as api

    skipped = too_recent(item, Path(item).stat(), settings)
    if skipped is not None:
        return skipped
    with open(item, "rb") as source:
        edit = analyze(source, item)
        if not edit.changed:
            return Outcome(item, UNCHANGED, stats=edit.stats)
        prompt = summarizer.single_request(edit.summarized_messages(source), focus=edit.options.focus)
    if prompt is None:
        return None
    system, user = prompt
    request = api.batch_request(
        "pending",
        model=summarizer.model,
        system=system,
        user=user,
        max_tokens=summarizer.summary_tokens,
        redact=summarizer.redact,
    )
    request["custom_id"] = batch_custom_id(item, edit.sha256, request)
    return Pending(item, edit.sha256, request, dict(summarizer.redactions), edit.previous_depth)


def _with_summary(
    source: BinaryIO, name: str, *, analyze: SummaryAnalyze, pending: Pending, text: str
) -> SummaryEdit:
    edit = analyze(source, name)
    if edit.sha256 != pending.sha256:
        raise Busy(f"{name}: busy: changed since its batch request was sent")
    edit.set_model_summary(text, "anthropic", pending.redactions, pending.previous_depth)
    return edit


def run_batch(
    items: list[str],
    *,
    settings: FileSettings,
    analyze: SummaryAnalyze,
    summarizer: Any,
    batch_id: str | None = None,
    poll_interval: float = 30.0,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """summarize through one Message Batch: build every file's request, send them together (or
    take the batch `batch_id` sent before), poll until it ends, then apply each result as it is
    read. Files too long for one request are summarized directly, in parts, first. Each result is
    applied like a direct summary: under the file's lock, only if the file is still what was sent.
    """
    from compactcli.backends import anthropic as api

    outcomes: list[Outcome] = []

    def record(outcome: Outcome) -> None:
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(outcome)

    pending: dict[str, Pending] = {}
    for item in items:
        entry = run_one(partial(batch_entry, settings=settings, analyze=analyze, summarizer=summarizer), item)
        if entry is None:
            record(run_one(partial(process, settings=settings, analyze=analyze), item))
        elif isinstance(entry, Outcome):
            record(entry)
        else:
            pending[entry.request["custom_id"]] = entry
    if not pending:
        return outcomes
    client = api.make_client(timeout=summarizer.timeout, max_retries=summarizer.max_retries)
    try:
        if batch_id is None:
            batch_id = api.create_batch(client, [p.request for p in pending.values()])
            click.echo(
                f"summarize: batch {batch_id} sent ({len(pending)} requests); "
                f"if interrupted, resume with --batch-id {batch_id}",
                err=True,
            )
        _wait(client, batch_id, len(pending), poll_interval)
        for custom_id, text, error in api.batch_results(client, batch_id):
            entry = pending.pop(custom_id, None)
            if entry is None:
                continue  # another file's request, or a file that changed since
            if error is not None or not text:
                message = f"{entry.item}: batch {batch_id}: request {error or 'returned no text'}"
                record(Outcome(entry.item, FAILED, UNAVAILABLE, message))
                continue
            apply = partial(_with_summary, analyze=analyze, pending=entry, text=text)
            record(run_one(partial(process, settings=settings, analyze=apply), entry.item))
    except Unavailable as err:
        for entry in pending.values():
            record(Outcome(entry.item, FAILED, UNAVAILABLE, f"{entry.item}: {err}"))
        return outcomes
    for entry in pending.values():
        message = f"{entry.item}: busy: batch {batch_id} has no result for it as it is now (changed since?)"
        record(Outcome(entry.item, BUSY, BUSY_EXIT, message))
    return outcomes


def _wait(client: Any, batch_id: str, total: int, poll_interval: float) -> None:
    """Poll until the batch has ended, with a progress bar on a terminal."""
    from tqdm import tqdm

    from compactcli.backends import anthropic as api

    with tqdm(
        total=total, unit="request", file=sys.stderr, disable=not sys.stderr.isatty(), leave=False
    ) as bar:
        while True:
            status = api.batch_status(client, batch_id)
            counts = status["request_counts"]
            done = sum(counts.get(k, 0) for k in ("succeeded", "errored", "canceled", "expired"))
            bar.update(max(0, done - bar.n))
            if status["processing_status"] == "ended":
                return
            time.sleep(poll_interval)
