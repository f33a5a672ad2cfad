"""Transcripts in an object store (s3://), against a real S3-compatible server on loopback (moto).

The CLI runs as a subprocess and finds the server the way a user points it at MinIO or another
S3-compatible store: AWS_ENDPOINT_URL and the usual AWS_* credential variables.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import bigfile
import pytest

pytestmark = pytest.mark.skipif(
    find_spec("s3fs") is None or find_spec("moto") is None,
    reason="needs the s3 extra and moto: pip install 'compactcli[s3]' 'moto[server]'",
)
BUCKET = "agent-sessions"
SECRET = "s3cr3t-value-that-must-never-be-printed"


def cli() -> list[str]:
    beside = Path(sys.executable).with_name("compactcli")
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "compactcli"]


@pytest.fixture(scope="module")
def s3() -> Iterator[tuple[dict[str, str], object]]:
    """(environment for the CLI, boto3 client) of a moto S3 server on 127.0.0.1 with one bucket."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server._server.server_address
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DASK_"))}
    env.update(
        AWS_ENDPOINT_URL=f"http://{host}:{port}",
        AWS_ACCESS_KEY_ID="test-key-id",
        AWS_SECRET_ACCESS_KEY=SECRET,
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
    )
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        aws_access_key_id="test-key-id",
        aws_secret_access_key=SECRET,
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=BUCKET)
    try:
        yield env, client
    finally:
        server.stop()


@pytest.fixture(scope="module")
def uploaded(s3, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """The same generated transcripts in a local folder and under s3://BUCKET/in/; micro's expected bytes."""
    _, client = s3
    root = tmp_path_factory.mktemp("local")
    expected = {}
    for dialect in bigfile.DIALECTS:
        relative = f"{dialect}/session.jsonl"
        (root / dialect).mkdir()
        original, after = bigfile.write(root / relative, dialect, turns=10, result_chars=300)
        client.put_object(Bucket=BUCKET, Key=f"in/{relative}", Body=original)
        expected[relative] = after
    client.put_object(Bucket=BUCKET, Key="in/notes.txt", Body=b"not picked by --glob")
    return root, expected


def run(env: dict[str, str], *args: object) -> subprocess.CompletedProcess:
    return subprocess.run([*cli(), *map(str, args)], capture_output=True, text=True, timeout=120, env=env)


def objects(client, prefix: str) -> dict[str, bytes]:
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {
        o["Key"][len(prefix) :]: client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listed
    }


@pytest.mark.parametrize("command", ["estimate", "validate"])
def test_read_only_commands_read_s3_urls_as_they_read_local_files(s3, uploaded, command: str) -> None:
    env, _ = s3
    root, expected = uploaded
    remote = run(env, command, f"s3://{BUCKET}/in", "--json")
    local = run(env, command, root, "--json")
    assert remote.returncode == local.returncode == 0, remote.stderr
    assert remote.stdout.replace(f"s3://{BUCKET}/in", str(root)) == local.stdout
    paths = [json.loads(line)["path"] for line in remote.stdout.splitlines()]
    assert sorted(paths) == sorted(f"s3://{BUCKET}/in/{relative}" for relative in expected)


def test_micro_writes_s3_results_under_output_dir_and_leaves_the_originals(s3, uploaded) -> None:
    env, client = s3
    _, expected = uploaded
    originals = objects(client, "in/")
    done = run(env, "micro", f"s3://{BUCKET}/in", "--output-dir", f"s3://{BUCKET}/out/", "--json")
    assert done.returncode == 0, done.stderr
    written = objects(client, "out/")
    manifest = [json.loads(line) for line in written.pop(".compactcli-manifest.jsonl").splitlines()]
    assert written == expected
    assert objects(client, "in/") == originals
    assert sorted((m["source"], m["output"]) for m in manifest) == sorted(
        (f"s3://{BUCKET}/in/{r}", f"s3://{BUCKET}/out/{r}") for r in expected
    )
    assert all(m["command"] == "micro" and len(m["sha256_after"]) == 64 for m in manifest)


def test_local_transcripts_compacted_into_a_bucket(s3, uploaded) -> None:
    env, client = s3
    root, expected = uploaded
    done = run(env, "micro", root, "--output-dir", f"s3://{BUCKET}/from-local")
    assert done.returncode == 0, done.stderr
    written = objects(client, "from-local/")
    assert {k: v for k, v in written.items() if not k.startswith(".")} == expected


def test_an_s3_url_is_never_rewritten_in_place(s3, uploaded) -> None:
    env, client = s3
    before = objects(client, "in/")
    done = run(env, "micro", f"s3://{BUCKET}/in")
    assert done.returncode == 2
    assert "--output-dir" in done.stderr and "atomic rename" in done.stderr
    assert objects(client, "in/") == before


def test_errors_name_the_url_and_never_print_the_secret(s3, uploaded) -> None:
    env, _ = s3
    missing = run(env, "estimate", f"s3://{BUCKET}/in/nothing-here.jsonl", f"s3://{BUCKET}/in", "-v")
    assert missing.returncode == 2
    assert f"s3://{BUCKET}/in/nothing-here.jsonl: no such file or folder" in missing.stderr
    no_bucket = run(env, "validate", "s3://no-such-bucket-here/x")
    assert no_bucket.returncode == 74
    assert "s3://no-such-bucket-here/x" in no_bucket.stderr
    for done in (missing, no_bucket):
        assert SECRET not in done.stdout + done.stderr


@pytest.mark.skipif(find_spec("distributed") is None, reason="needs the dask extra")
def test_a_local_cluster_compacts_a_bucket_like_a_local_run(s3, uploaded) -> None:
    env, client = s3
    _, expected = uploaded
    done = run(
        env, "micro", f"s3://{BUCKET}/in", "--output-dir", f"s3://{BUCKET}/dask-out", "--scheduler", "local:2"
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().endswith(f"{len(expected)} files compacted, 0 unchanged")
    written = objects(client, "dask-out/")
    assert {k: v for k, v in written.items() if not k.startswith(".")} == expected


def test_replay_reads_an_s3_url_as_it_reads_the_local_file(s3, uploaded) -> None:
    env, _ = s3
    root, _ = uploaded
    remote = run(env, "replay", f"s3://{BUCKET}/in/anthropic/session.jsonl", "--json", "--threshold", "500")
    local = run(env, "replay", root / "anthropic" / "session.jsonl", "--json", "--threshold", "500")
    assert remote.returncode == local.returncode == 0, remote.stderr
    # the simulation did something to compare
    assert json.loads(remote.stdout)["stats"]["compactions"]["auto"] >= 1
    assert remote.stdout.replace(f"s3://{BUCKET}/in", str(root)) == local.stdout
