"""Real object-store servers on loopback for the URL tests: S3 (moto), Google Cloud Storage
(gcp-storage-emulator) and Azure Blob (Azurite).

Each is set up the way a user points a client at such a server: only through the filesystem's usual
environment (AWS_ENDPOINT_URL and AWS_*; STORAGE_EMULATOR_HOST and fsspec's FSSPEC_GS_TOKEN; the
AZURE_STORAGE_CONNECTION_STRING), never on the command line. Each fixture puts and lists objects through
the service's own protocol (boto3, the GCS JSON API, azure-storage-blob), not through the fsspec
filesystem that compactcli reads them with. A server whose package or program is missing is skipped
with the reason and what to install.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pytest

from helpers.cli import environ

BUCKET = "agent-sessions"
# Azurite's one built-in account and its published development key (not a secret anywhere else).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@dataclass
class Store:
    """A bucket on a loopback server: URLs for the CLI, its environment, and a client of its own."""

    scheme: str
    env: dict[str, str]  # the CLI's whole environment
    secret: str | None  # a credential in `env` that must never be printed
    put: Callable[[str, bytes], None]  # key -> bytes
    objects: Callable[[str], dict[str, bytes]]  # every object under a prefix, keyed relative to it

    def url(self, key: str = "") -> str:
        return f"{self.scheme}://{BUCKET}/{key}"


def _base_env() -> dict[str, str]:
    """The test's environment without any cloud or Dask setting of the machine it runs on."""
    return environ(("AWS_", "DASK_", "AZURE_", "GOOGLE_", "STORAGE_EMULATOR", "FSSPEC_", "GCSFS_"))


@contextmanager
def s3_store() -> Iterator[Store]:
    if find_spec("s3fs") is None or find_spec("moto") is None:
        pytest.skip("needs the s3 extra and moto: pip install 'compactcli[s3]' 'moto[server]'")
    import boto3
    from moto.server import ThreadedMotoServer

    secret = "s3cr3t-value-that-must-never-be-printed"
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server._server.server_address
    env = _base_env() | {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "test-key-id",
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    client = boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        aws_access_key_id="test-key-id",
        aws_secret_access_key=secret,
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=BUCKET)

    def put(key: str, data: bytes) -> None:
        client.put_object(Bucket=BUCKET, Key=key, Body=data)

    def objects(prefix: str) -> dict[str, bytes]:
        listed = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
        return {
            o["Key"][len(prefix) :]: client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
            for o in listed
        }

    try:
        yield Store("s3", env, secret, put, objects)
    finally:
        server.stop()


@contextmanager
def gcs_store() -> Iterator[Store]:
    if find_spec("gcsfs") is None or find_spec("gcp_storage_emulator") is None:
        pytest.skip("needs the gcs extra and an emulator: pip install 'compactcli[gcs]' gcp-storage-emulator")
    from gcp_storage_emulator.server import create_server

    server = create_server("127.0.0.1", 0, in_memory=True, default_bucket=BUCKET)
    server.start()
    host, port = server._api._httpd.server_address
    endpoint = f"http://{host}:{port}"
    # STORAGE_EMULATOR_HOST is what Google's own clients and gcsfs read; an emulator takes no
    # credentials, which fsspec's configuration (FSSPEC_<PROTOCOL>_<ARG>) says to gcsfs; and it has no
    # gRPC storage-control service, which gcsfs asks each bucket's layout of unless told not to (it
    # then retries until its timeout at every call).
    env = _base_env() | {
        "STORAGE_EMULATOR_HOST": endpoint,
        "FSSPEC_GS_TOKEN": "anon",
        "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false",
    }
    objects_url = f"{endpoint}/storage/v1/b/{BUCKET}/o"

    def put(key: str, data: bytes) -> None:
        query = urllib.parse.urlencode({"uploadType": "media", "name": key})
        request = urllib.request.Request(
            f"{endpoint}/upload/storage/v1/b/{BUCKET}/o?{query}",
            data=data,
            headers={"Content-Type": "application/octet-stream"},
            method="POST",
        )
        urllib.request.urlopen(request, timeout=30).close()

    def objects(prefix: str) -> dict[str, bytes]:
        query = urllib.parse.urlencode({"prefix": prefix})
        with urllib.request.urlopen(f"{objects_url}?{query}", timeout=30) as listing:
            names = [item["name"] for item in json.load(listing).get("items", [])]
        found = {}
        for name in names:
            url = f"{objects_url}/{urllib.parse.quote(name, safe='')}?alt=media"
            with urllib.request.urlopen(url, timeout=30) as body:
                found[name[len(prefix) :]] = body.read()
        return found

    try:
        yield Store("gs", env, None, put, objects)
    finally:
        server.stop()


def azurite_program() -> str | None:
    """Azurite's blob server: the copy .ci/run installs (npm, in $COMPACTCLI_AZURITE_PREFIX, by default
    ~/.cache/compactcli/azurite), else one on PATH."""
    prefix = os.environ.get("COMPACTCLI_AZURITE_PREFIX") or Path.home() / ".cache" / "compactcli" / "azurite"
    installed = Path(prefix) / "node_modules" / ".bin" / "azurite-blob"
    if installed.exists():
        return str(installed)
    return shutil.which("azurite-blob")


@contextmanager
def azure_store(workdir: Path) -> Iterator[Store]:
    if find_spec("adlfs") is None:
        pytest.skip("needs the azure extra: pip install 'compactcli[azure]'")
    program = azurite_program()
    if program is None:
        pytest.skip("needs Azurite: npm install azurite (.ci/run installs it where npm is present)")
    from azure.storage.blob import BlobServiceClient

    log = workdir / "azurite.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [
                program,
                *("--blobHost", "127.0.0.1", "--blobPort", "0"),
                *("--inMemoryPersistence", "--skipApiVersionCheck", "--disableTelemetry"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )
    try:
        endpoint = _wait_for_listening(server, log)
        connection = (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint={endpoint}/{AZURITE_ACCOUNT};"
        )
        env = _base_env() | {"AZURE_STORAGE_CONNECTION_STRING": connection}
        container = BlobServiceClient.from_connection_string(connection).create_container(BUCKET)

        def put(key: str, data: bytes) -> None:
            container.upload_blob(key, data, overwrite=True)

        def objects(prefix: str) -> dict[str, bytes]:
            return {
                blob.name[len(prefix) :]: container.download_blob(blob.name).readall()
                for blob in container.list_blobs(name_starts_with=prefix)
            }

        yield Store("az", env, AZURITE_KEY, put, objects)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _wait_for_listening(server: subprocess.Popen, log: Path, timeout: float = 60) -> str:
    """The http://host:port Azurite says it listens on (it picks a free port)."""
    import re
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(rb"listens on (http://[0-9.]+:[0-9]+)", log.read_bytes())
        if found:
            return found.group(1).decode()
        if server.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError(f"Azurite did not start: {log.read_text(errors='replace')[-2000:]}")


STORES = {"s3": s3_store, "gs": gcs_store, "az": azure_store}
