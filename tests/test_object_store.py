"""Transcripts in object stores (s3://, gs://, az://), against real servers on loopback.

The CLI runs as a subprocess and finds each server the way a user points it at one: through the
filesystem's usual environment only (tests/helpers/object_stores.py says which variables). The same tests run
against every store; a store whose server or extra is missing is skipped with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest
from helpers import bigfile
from helpers.cli import run_cli
from helpers.object_stores import STORES, Store


@pytest.fixture(scope="module", params=sorted(STORES))
def store(request, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    start = STORES[request.param]
    if request.param == "az":
        with start(tmp_path_factory.mktemp("azurite")) as running:
            yield running
    else:
        with start() as running:
            yield running


@pytest.fixture(scope="module")
def uploaded(store: Store, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """The same generated transcripts in a local folder and under BUCKET/in/; micro's expected bytes."""
    root = tmp_path_factory.mktemp("local")
    expected = {}
    for dialect in bigfile.DIALECTS:
        relative = f"{dialect}/session.jsonl"
        (root / dialect).mkdir()
        original, after = bigfile.write(root / relative, dialect, turns=10, result_chars=300)
        store.put(f"in/{relative}", original)
        expected[relative] = after
    store.put("in/notes.txt", b"not picked by --glob")
    return root, expected


@pytest.mark.parametrize("command", ["estimate", "validate"])
def test_read_only_commands_read_urls_as_they_read_local_files(store, uploaded, command: str) -> None:
    root, expected = uploaded
    remote = run_cli(command, store.url("in"), "--json", env=store.env, text=True)
    local = run_cli(command, root, "--json", env=store.env, text=True)
    assert remote.returncode == local.returncode == 0, remote.stderr
    assert remote.stdout.replace(store.url("in"), str(root)) == local.stdout
    paths = [json.loads(line)["path"] for line in remote.stdout.splitlines()]
    assert sorted(paths) == sorted(store.url(f"in/{relative}") for relative in expected)


def test_micro_writes_results_under_output_dir_and_leaves_the_originals(store, uploaded) -> None:
    _, expected = uploaded
    originals = store.objects("in/")
    done = run_cli(
        "micro", store.url("in"), "--output-dir", store.url("out/"), "--json", env=store.env, text=True
    )
    assert done.returncode == 0, done.stderr
    written = store.objects("out/")
    manifest = [json.loads(line) for line in written.pop(".compactcli-manifest.jsonl").splitlines()]
    assert written == expected
    assert store.objects("in/") == originals
    assert sorted((m["source"], m["output"]) for m in manifest) == sorted(
        (store.url(f"in/{r}"), store.url(f"out/{r}")) for r in expected
    )
    assert all(m["command"] == "micro" and len(m["sha256_after"]) == 64 for m in manifest)


def test_local_transcripts_compacted_into_a_bucket(store, uploaded) -> None:
    root, expected = uploaded
    done = run_cli("micro", root, "--output-dir", store.url("from-local"), env=store.env, text=True)
    assert done.returncode == 0, done.stderr
    written = store.objects("from-local/")
    assert {k: v for k, v in written.items() if not k.startswith(".")} == expected
    assert ".compactcli-manifest.jsonl" in written


def test_a_url_is_never_rewritten_in_place(store, uploaded) -> None:
    before = store.objects("in/")
    done = run_cli("micro", store.url("in"), env=store.env, text=True)
    assert done.returncode == 2
    assert "--output-dir" in done.stderr and "atomic rename" in done.stderr
    assert store.objects("in/") == before


def test_errors_name_the_url_and_never_print_the_secret(store, uploaded) -> None:
    missing = run_cli(
        "estimate", store.url("in/nothing-here.jsonl"), store.url("in"), "-v", env=store.env, text=True
    )
    assert missing.returncode == 2
    assert f"{store.url('in/nothing-here.jsonl')}: no such file or folder" in missing.stderr
    # a bucket that does not exist is a path that does not exist, on every store (exit 2)
    no_bucket = f"{store.scheme}://no-such-bucket-here/x"
    absent = run_cli("validate", no_bucket, env=store.env, text=True)
    assert absent.returncode == 2, absent.stderr
    assert f"{no_bucket}: no such file or folder" in absent.stderr
    if store.secret is not None:
        for done in (missing, absent):
            assert store.secret not in done.stdout + done.stderr


@pytest.mark.skipif(find_spec("distributed") is None, reason="needs the dask extra")
def test_a_local_cluster_compacts_a_bucket_like_a_local_run(store, uploaded) -> None:
    _, expected = uploaded
    done = run_cli(
        "micro",
        store.url("in"),
        "--output-dir",
        store.url("dask-out"),
        "--scheduler",
        "local:2",
        env=store.env,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().endswith(f"{len(expected)} files compacted, 0 unchanged")
    written = store.objects("dask-out/")
    assert {k: v for k, v in written.items() if not k.startswith(".")} == expected


def test_replay_reads_a_url_as_it_reads_the_local_file(store, uploaded) -> None:
    root, _ = uploaded
    remote = run_cli(
        "replay",
        store.url("in/anthropic/session.jsonl"),
        "--json",
        "--threshold",
        "500",
        env=store.env,
        text=True,
    )
    local = run_cli(
        "replay",
        root / "anthropic" / "session.jsonl",
        "--json",
        "--threshold",
        "500",
        env=store.env,
        text=True,
    )
    assert remote.returncode == local.returncode == 0, remote.stderr
    # the simulation did something to compare
    assert json.loads(remote.stdout)["stats"]["compactions"]["auto"] >= 1
    assert remote.stdout.replace(store.url("in"), str(root)) == local.stdout


def test_error_texts_mask_the_secret_parts_of_a_connection_string(monkeypatch) -> None:
    from compactcli.storage import remote

    key = "c2VjcmV0LWtleS1vZi10aGUtYWNjb3VudA=="
    connection = f"DefaultEndpointsProtocol=https;AccountName=team;AccountKey={key};EndpointSuffix=x.net"
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection)
    quoted_whole = remote._reason(ValueError(f"bad connection string {connection}"))
    quoted_key = remote._reason(PermissionError(f"signature of {key} refused"))
    quoted_part = remote._reason(OSError("AccountKey=another-one-not-in-env;AccountName=x"))
    assert quoted_whole == "ValueError: bad connection string ***"
    assert quoted_key == "PermissionError: signature of *** refused"
    assert quoted_part == "OSError: AccountKey=***;AccountName=x"
