"""No input ends a run with a traceback (docs/design.md, "Exit codes"): records of random shapes and types,
seeded from the real-looking samples of each dialect (a value anywhere replaced by one of another type, a
key dropped or added, an integer of 5,000 digits, a lone surrogate), fed to every command in this process.
Each run ends with a documented exit code, and a file refused as bad data is named with its line.
A few subprocess checks of the installed command pin the cases found by hand, and that the other files of
a run are still processed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.cli import invoke, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SEEDS = {
    path.relative_to(SAMPLES).as_posix(): [json.loads(line) for line in path.read_text().splitlines() if line]
    for path in sorted(SAMPLES.glob("*/*.jsonl"))
}
BIG = "9" * 5_000  # past the 4,300 digits Python converts from text by default
BIG_MARK = "@@big-integer@@"
KEYS = (
    *("type", "role", "content", "id", "text", "tool_use_id", "tool_call_id", "tool_calls", "name"),
    *("input", "payload", "message", "uuid", "parentUuid", "call_id", "output", "arguments", "function"),
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from([BIG_MARK, "\ud800", "a\udc00b", "", "tool_use", "tool_result", "user", "assistant"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    max_leaves=6,
)


def paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every place inside a record: dict keys and list indexes, outermost first."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def mutate(record: dict, path: tuple, how: str, new: object) -> dict:
    record = json.loads(json.dumps(record))
    parent = record
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "drop" and isinstance(parent, dict):
        del parent[last]
    elif how == "add" and isinstance(parent, dict):
        parent[KEYS[hash(str(new)) % len(KEYS)]] = new
    else:
        parent[last] = new
    return record


@st.composite
def malformed_files(draw: st.DrawFn) -> tuple[str, str]:
    name = draw(st.sampled_from(sorted(SEEDS)))
    records = list(SEEDS[name])
    for _ in range(draw(st.integers(1, 3))):
        line = draw(st.integers(0, len(records) - 1))
        places = paths(records[line])
        if not places:
            continue
        path = places[draw(st.integers(0, len(places) - 1))]
        records[line] = mutate(
            records[line], path, draw(st.sampled_from(["set", "set", "drop", "add"])), draw(values)
        )
    text = "".join(json.dumps(record) + "\n" for record in records)
    return name, text.replace(json.dumps(BIG_MARK), BIG)


COMMANDS = (
    ("validate",),
    ("estimate",),
    ("estimate", "--method", "seed", "--top", "3"),
    ("micro", "-o", "{out}"),
    ("micro", "--check", "--keep", "1"),
    ("summarize", "--backend", "digest", "-o", "{out}"),
    ("summarize", "--backend", "digest", "--keep-last", "2", "--dry-run"),
    ("replay", "--backend", "digest", "--threshold", "500"),
    ("probe", "{path}"),
)
DOCUMENTED = {0, 1, 65}
NAMED_LINE = re.compile(r"\.jsonl:\d+: ")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=malformed_files(), command=st.sampled_from(COMMANDS))
def test_no_record_of_any_shape_ends_a_command_with_a_traceback(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[str, str], command: tuple[str, ...]
) -> None:

    folder = tmp_path_factory.mktemp("malformed")
    path = folder / "t.jsonl"
    path.write_text(case[1], encoding="utf-8", errors="surrogatepass")
    args = [part.format(out=folder / "out.jsonl", path=path) for part in command]

    result = invoke(*args, path)

    seed = case[0]
    crashed = result.exception if not isinstance(result.exception, SystemExit) else None
    assert crashed is None, (seed, command, repr(crashed)[:300])
    assert result.exit_code in DOCUMENTED, (seed, command, result.exit_code, result.stderr[-300:])
    assert "Traceback" not in result.stderr
    if result.exit_code == 65:
        assert NAMED_LINE.search(result.stderr), (seed, command, result.stderr[-300:])


# -- the cases found by hand, through the installed command ------------------------------------------------


def _lines(*records: object) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


USER = {"role": "user", "content": "Fix the parser, please."}
CALL = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}
HAND_CASES = {
    "big-integer": (_lines(USER, '{"role": "assistant", "content": "ok", "n": ' + BIG + "}"), 0),
    "tool-calls-number": (_lines(USER, {"role": "assistant", "content": None, "tool_calls": 5}), 0),
    "tool-calls-true": (_lines(USER, {"role": "assistant", "content": None, "tool_calls": True}), 0),
    "tool-use-id-object": (
        _lines(
            USER,
            {"role": "assistant", "content": [CALL]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": {"a": 1}, "content": "x" * 300}],
            },
        ),
        None,
    ),
    "lone-surrogate": (
        _lines('{"role": "user", "content": "hi \\ud800 there"}', {"role": "assistant", "content": "ok"}),
        0,
    ),
    "role-list": (_lines({"role": ["user"], "content": "hi"}, {"role": "assistant", "content": "ok"}), 65),
}


@pytest.mark.parametrize("case", HAND_CASES, ids=HAND_CASES)
def test_the_hand_found_cases_end_without_a_traceback(tmp_path: Path, case: str) -> None:
    text, expected = HAND_CASES[case]
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    for command in (
        ["validate"],
        ["estimate"],
        ["micro", "--check"],
        ["summarize", "--backend", "digest", "-o", tmp_path / "o"],
    ):
        run = run_cli(*command, path, text=True)
        assert "Traceback" not in run.stderr, (command, run.stderr)
        assert run.returncode in DOCUMENTED, (command, run.stderr)
        if expected == 65:
            assert run.returncode == 65 and f"{path}:1: " in run.stderr, (command, run.stderr)


def test_a_big_integer_is_written_back_as_it_was(tmp_path: Path) -> None:
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "x" * 500}
    records = [USER, {"role": "assistant", "content": [CALL]}, {"role": "user", "content": [result]}]
    records += [{"role": "assistant", "content": [dict(CALL, id=f"t{n}")]} for n in range(2, 6)]
    path = tmp_path / "t.jsonl"
    path.write_text(_lines(*records[:3], '{"role": "assistant", "content": "done", "n": ' + BIG + "}"))
    run = run_cli("micro", "--keep", "0", "-o", tmp_path / "out.jsonl", path, text=True)
    assert run.returncode == 0, run.stderr
    out = (tmp_path / "out.jsonl").read_text()
    assert BIG in out and "x" * 500 not in out


def test_a_malformed_file_fails_alone_and_the_others_are_processed(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    bad = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "y"}]}
    (folder / "a.jsonl").write_text(_lines({"role": {"x": 1}, "content": "hi"}, bad))
    long_result = {"type": "tool_result", "tool_use_id": "t1", "content": "x" * 500}
    good = [USER, {"role": "assistant", "content": [CALL]}, {"role": "user", "content": [long_result]}]
    good += [{"role": "assistant", "content": "done"}]
    (folder / "b.jsonl").write_text(_lines(*good))

    run = run_cli("micro", "--keep", "0", folder, text=True)

    assert run.returncode == 65, run.stderr
    assert f"{folder / 'a.jsonl'}:1: " in run.stderr
    assert "Traceback" not in run.stderr
    assert "x" * 500 not in (folder / "b.jsonl").read_text()  # the file after the bad one was compacted


def test_a_file_of_role_records_without_content_is_refused_naming_its_keys(tmp_path: Path) -> None:
    # A log of another tool whose records happen to carry `role`: not an OpenAI chat read as empty messages.
    path = tmp_path / "events.jsonl"
    path.write_text(
        _lines(*({"role": "user", "kind": "event", "raw": "x" * 40, "time": n} for n in range(5)))
    )
    run = run_cli("estimate", path, text=True)
    assert run.returncode == 65, run.stderr
    assert (
        f"{path}:1: not a transcript compactcli reads: its first record has keys {{role, kind, raw, time}}"
        in (run.stderr)
    )
