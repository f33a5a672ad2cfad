"""The cache of unchanged files (compactcli/cache.py): a file exactly as it was last time is not read again;
a file changed in any way a writer can change it is.

Reads are counted with an audit hook in a small wrapper around the installed package (every `open` of a
transcript raises the `open` audit event, in worker processes too), run as a real subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Runs compactcli with SETTLE_SECONDS shortened (so tests need not wait 2 s for a file to settle) and logs
# every open of a .jsonl file, one path a line, to the file named in argv[1].
WRAPPER = """
import os, sys
log = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
settle, version = float(sys.argv[2]), sys.argv[3]

def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].endswith(".jsonl"):
        os.write(log, (os.path.abspath(args[0]) + "\\n").encode())

sys.addaudithook(hook)
from compactcli.run import cache
cache.SETTLE_SECONDS = settle
if version:
    cache.__version__ = version
from compactcli.cli import main
sys.argv = ["compactcli", *sys.argv[4:]]
main()
"""

SETTLE = 0.2  # longer than a timestamp tick here; tests wait this long for a file to settle


def _record(role: str, content) -> bytes:
    return json.dumps({"role": role, "content": content}).encode() + b"\n"


def transcript(results: int) -> bytes:
    """An Anthropic transcript with `results` bash calls whose outputs are long enough to clear."""
    lines = [_record("user", "list the files, again and again")]
    for n in range(results):
        use = {"type": "tool_use", "id": f"toolu_{n:02d}", "name": "bash", "input": {"command": "ls"}}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n:02d}", "content": f"file{n}.txt\n" * 30}
        lines += [_record("assistant", [use]), _record("user", [result])]
    lines.append(_record("assistant", "done"))
    return b"".join(lines)


class Runner:
    def __init__(self, tmp_path: Path) -> None:
        self.cache_home = tmp_path / "cache-home"
        self.log = tmp_path / "opens.log"

    def __call__(self, *args: object, settle: float = SETTLE, version: str = "", cwd=None) -> dict:
        self.log.write_bytes(b"")
        env = dict(os.environ, XDG_CACHE_HOME=str(self.cache_home))
        argv = [sys.executable, "-c", WRAPPER, str(self.log), str(settle), version, *map(str, args)]
        proc = subprocess.run(argv, capture_output=True, env=env, cwd=cwd, timeout=120)
        assert proc.returncode in (0, 1, 65), proc.stderr.decode()
        outcomes = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith(b"{")]
        return {"opens": self.log.read_text().splitlines(), "outcomes": outcomes, "stderr": proc.stderr}

    def reads(self, path: Path, result: dict) -> int:
        return result["opens"].count(str(path.resolve()))


@pytest.fixture
def run(tmp_path: Path) -> Runner:
    return Runner(tmp_path)


@pytest.fixture
def settled(tmp_path: Path):
    """A transcript that micro leaves unchanged (3 results, --keep 3), old enough to be remembered."""
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "session.jsonl"
    path.write_bytes(transcript(3))
    time.sleep(SETTLE * 1.5)
    return path


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def remembered(run: Runner, path: Path, *extra: object) -> dict:
    """Run micro twice: the first run reads the file and remembers it, the second must not read it,
    and writes nothing beside it."""
    first = run("micro", "--json", *extra, path.parent)
    assert run.reads(path, first) >= 1
    assert first["outcomes"][0]["status"] == "unchanged"
    before = _listing(path.parent)
    second = run("micro", "--json", *extra, path.parent)
    assert run.reads(path, second) == 0, "an unchanged file was read again"
    assert second["outcomes"] == first["outcomes"]  # the remembered answer is the same answer
    assert _listing(path.parent) == before
    return second


def test_unchanged_file_is_not_read_again_and_the_cache_is_private(run, settled):
    remembered(run, settled)
    caches = list((run.cache_home / "compactcli").iterdir())
    assert [c.name.startswith("seen-micro-") for c in caches] == [True]
    assert oct(caches[0].stat().st_mode & 0o777) == "0o600"
    assert oct(caches[0].parent.stat().st_mode & 0o777) == "0o700"


def _append(path: Path) -> None:
    with open(path, "ab") as f:
        f.write(transcript(2))  # now 5 results: micro clears two


def _rewrite_same_size(path: Path) -> None:
    data = path.read_bytes()
    with open(path, "r+b") as f:  # in place: same inode, same size, at once (within the same tick)
        f.write(data.replace(b"list the files", b"LIST the files"))


def _touch_keeping_mtime(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # only ctime moves


def _touch(path: Path) -> None:
    os.utime(path)


def _replace_by_rename(path: Path) -> None:
    fresh = path.with_name(".session.new")
    fresh.write_bytes(path.read_bytes())  # same bytes, same size: only the inode tells
    st = path.stat()
    os.utime(fresh, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(fresh, path)


@pytest.mark.parametrize(
    "change", [_append, _rewrite_same_size, _touch_keeping_mtime, _touch, _replace_by_rename]
)
def test_a_changed_file_is_read_again(run, settled, change):
    remembered(run, settled)
    change(settled)
    after = run("micro", "--json", settled.parent)
    assert run.reads(settled, after) >= 1
    if change is _append:
        assert after["outcomes"][0]["status"] == "changed"
        assert after["outcomes"][0]["stats"]["cleared"] == 2


def test_other_options_or_version_read_again(run, settled):
    remembered(run, settled)
    assert run.reads(settled, run("micro", "--json", "--keep", "5", settled.parent)) >= 1
    assert run.reads(settled, run("micro", "--json", settled.parent, version="99.0")) >= 1
    # and each is remembered in its own right
    assert run.reads(settled, run("micro", "--json", "--keep", "5", settled.parent)) == 0


def test_no_cache_reads_every_time_and_remembers_nothing(run, settled):
    for _ in range(2):
        result = run("micro", "--json", "--no-cache", settled.parent)
        assert run.reads(settled, result) >= 1
    assert not (run.cache_home / "compactcli").exists()


def test_a_file_changed_just_now_is_not_remembered(run, tmp_path):
    # The settle window bounds the same-size-rewrite blind spot: a file modified within it is read again.
    path = tmp_path / "fresh.jsonl"
    path.write_bytes(transcript(3))
    for _ in range(2):
        assert run.reads(path, run("micro", "--json", path, settle=60)) >= 1


def test_output_to_a_file_always_reads(run, settled, tmp_path):
    remembered(run, settled)
    out = tmp_path / "out.jsonl"
    result = run("micro", "--json", settled, "-o", out)
    assert run.reads(settled, result) >= 1
    assert out.read_bytes() == settled.read_bytes()


def test_check_uses_the_cache_too(run, settled):
    remembered(run, settled, "--check")


def test_min_age_is_applied_before_the_cache(run, settled):
    remembered(run, settled)
    result = run("micro", "--json", "--min-age", "3600", settled.parent)
    assert [o["status"] for o in result["outcomes"]] == ["skipped"]


# --- --jobs ---------------------------------------------------------------------------------------


def _folder(root: Path) -> Path:
    root.mkdir()
    for n in range(40):
        (root / f"s{n:02d}.jsonl").write_bytes(transcript(n % 7))
    (root / "bad.jsonl").write_bytes(b'{"role": "user", "content": "x"}\nnot json\n')
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.glob("*.jsonl"))}


def _normalized(outcomes: list[dict], root: Path) -> list[dict]:
    text = json.dumps(outcomes).replace(str(root), "ROOT")
    return json.loads(text)


@pytest.mark.parametrize("jobs", [2, 3])
def test_parallel_runs_give_the_same_bytes_and_report_as_one_job(run, tmp_path, jobs):
    one, many = _folder(tmp_path / "one"), _folder(tmp_path / "many")
    a = run("micro", "--json", "--no-cache", "--archive-dir", tmp_path / "arch-one", "-j1", one)
    b = run("micro", "--json", "--no-cache", "--archive-dir", tmp_path / "arch-many", f"-j{jobs}", many)
    assert _tree(one) == _tree(many)
    assert _tree(one) != _tree(_folder(tmp_path / "original"))  # micro did change files
    for outcome in a["outcomes"] + b["outcomes"]:
        outcome.get("stats", {}).pop("archive", None)  # named after the time of the copy
    assert _normalized(a["outcomes"], one) == _normalized(b["outcomes"], many)
    assert [o["status"] for o in a["outcomes"]].count("failed") == 1


# --- estimate and validate remember their figures too ---------------------------------------------


@pytest.mark.parametrize(
    "command", [("estimate", "--json"), ("estimate", "--json", "--max-tokens", "10"), ("validate", "--json")]
)
def test_estimate_and_validate_answer_unchanged_files_unread(run, settled, command):
    first = run(*command, settled.parent)
    assert run.reads(settled, first) >= 1
    second = run(*command, settled.parent)
    assert run.reads(settled, second) == 0
    assert second["outcomes"] == first["outcomes"] and first["outcomes"]
    _append(settled)
    third = run(*command, settled.parent)
    assert run.reads(settled, third) >= 1
    assert third["outcomes"] != first["outcomes"]  # more lines, more tokens


def test_a_cache_file_of_another_scope_is_never_used(tmp_path, monkeypatch):
    # File names are a CRC of the scope: should two scopes share a name, the file says whose it is.
    from compactcli.report import UNCHANGED, Outcome
    from compactcli.run.cache import RunCache, stamp_of

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-home"))
    path = tmp_path / "a.jsonl"
    path.write_bytes(transcript(1))
    mine = RunCache.open("micro", {"keep": 3}, {UNCHANGED})
    mine.remember(Outcome(str(path), UNCHANGED, stamp=stamp_of(os.stat(path))))
    mine.save()
    assert list(RunCache.open("micro", {"keep": 3}, {UNCHANGED}).known([str(path)])) == [0]

    other = RunCache.open("micro", {"keep": 4}, {UNCHANGED})
    assert other.path != mine.path
    other.path.write_bytes(mine.path.read_bytes())  # as if the names collided
    assert RunCache.open("micro", {"keep": 4}, {UNCHANGED}).known([str(path)]) == {}


def test_an_edit_to_any_module_outside_run_is_a_new_code_version(tmp_path: Path) -> None:
    """An edited install never reuses answers: the code version covers every package, not run/ alone."""
    import compactcli.pipelines.estimate_file as module
    from compactcli.run import cache

    before = cache._code_version()
    path = Path(module.__file__)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    try:
        assert cache._code_version() != before
    finally:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
