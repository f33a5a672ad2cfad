"""summarize --verify: each summarized file is probed against its original, and --min-retention R makes a file
below R exit 1. The summary comes from the fake Messages API (tests/helpers/fakeapi.py), so what it keeps is
known: the transcript holds two facts, counted by hand (the path src/app.py and the user's instruction).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cli import run_cli

INSTRUCTION = "Edit src/app.py"


def summarize(fake_api, tmp_path: Path, *args: str) -> tuple[int, dict, str]:
    path = tmp_path / "t.jsonl"
    records = [{"role": "user", "content": INSTRUCTION}, {"role": "assistant", "content": "On it."}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    fake_api.reply_text = lambda body: "Worked on src/app.py."
    done = run_cli("summarize", "--backend", "anthropic", "--json", *args, "t.jsonl", cwd=tmp_path,
                   env=fake_api.env(), text=True)  # fmt: skip
    [report] = [json.loads(line) for line in done.stdout.splitlines()]
    return done.returncode, report, done.stderr


@pytest.mark.parametrize(("minimum", "code"), [(None, 0), ("0.5", 0), ("0.51", 1)])
def test_retention_of_the_summary_is_reported_and_gated(fake_api, tmp_path: Path, minimum, code) -> None:
    # Without the user's messages kept, the summary keeps the path and loses the instruction: 1 of 2.
    gate = ["--min-retention", minimum] if minimum else ["--verify"]
    returncode, report, stderr = summarize(fake_api, tmp_path, "--keep-user-messages", "0", *gate)
    assert (returncode, report["exit_code"]) == (code, code), stderr
    assert report["status"] == ("unchanged" if code else "changed")
    assert report["stats"]["retention"] == 0.5
    assert report["stats"]["retention_by_category"]["paths"] == 1.0
    assert report["stats"]["retention_by_category"]["instructions"] == 0.0
    assert "lowest retention 0.50" in stderr
    if code:
        why = f"t.jsonl: retention 0.50 is below --min-retention {minimum}: the original is kept; "
        why += "nothing written or archived"
        assert report["message"] == why
        assert why in stderr.splitlines()
        assert "(1 below --min-retention)" in stderr


def test_below_min_retention_the_original_stays_and_nothing_is_archived(fake_api, tmp_path: Path) -> None:
    returncode, report, stderr = summarize(
        fake_api, tmp_path, "--keep-user-messages", "0", "--min-retention", "0.9"
    )
    assert returncode == 1, stderr
    assert (report["status"], report["stats"]["reason"]) == ("unchanged", "below --min-retention")
    assert (tmp_path / "t.jsonl").read_text().splitlines()[1] == json.dumps(
        {"role": "assistant", "content": "On it."}
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]  # no archive, no archive folder, no temp
    assert "archive" not in report["stats"]
    # at or above R the file is replaced and archived as usual
    returncode, report, stderr = summarize(
        fake_api, tmp_path, "--keep-user-messages", "0", "--min-retention", "0.5"
    )
    assert (returncode, report["status"]) == (0, "changed"), stderr
    assert Path(report["stats"]["archive"]).is_file()


def test_the_users_messages_kept_verbatim_carry_the_instruction(fake_api, tmp_path: Path) -> None:
    returncode, report, _ = summarize(fake_api, tmp_path, "--min-retention", "1")
    assert returncode == 0
    assert report["stats"]["retention"] == 1.0


def test_an_output_file_is_what_is_probed(fake_api, tmp_path: Path) -> None:
    returncode, report, _ = summarize(
        fake_api, tmp_path, "--keep-user-messages", "0", "--verify", "-o", "out.jsonl"
    )
    assert returncode == 0
    assert report["stats"]["retention"] == 0.5
    assert (tmp_path / "t.jsonl").read_text().startswith(json.dumps({"role": "user", "content": INSTRUCTION}))


@pytest.mark.parametrize("existing", [None, b"an older output\n"])
def test_below_min_retention_an_output_file_is_not_written(fake_api, tmp_path: Path, existing) -> None:
    out = tmp_path / "out.jsonl"
    if existing is not None:
        out.write_bytes(existing)
    returncode, report, stderr = summarize(
        fake_api, tmp_path, "--keep-user-messages", "0", "--min-retention", "0.9", "-o", "out.jsonl"
    )
    assert (returncode, report["exit_code"], report["status"]) == (1, 1, "unchanged"), stderr
    assert report["stats"]["reason"] == "below --min-retention"
    assert "retention 0.50 is below --min-retention 0.9" in stderr
    expected = ["t.jsonl"] if existing is None else ["out.jsonl", "t.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == expected  # no output, no archive, no temp
    if existing is not None:
        assert out.read_bytes() == existing
    # at R the output is written, the original left as it was
    returncode, report, stderr = summarize(
        fake_api, tmp_path, "--keep-user-messages", "0", "--min-retention", "0.5", "-o", "out.jsonl"
    )
    assert (returncode, report["status"]) == (0, "changed"), stderr
    assert "Worked on src/app.py." in out.read_text()


def test_below_min_retention_stdout_gets_nothing(fake_api, tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(json.dumps({"role": "user", "content": INSTRUCTION}) + "\n")
    fake_api.reply_text = lambda body: "Worked on something."
    args = ("--backend", "anthropic", "--keep-user-messages", "0", "--json", "-o", "-")
    done = run_cli("summarize", *args, "--min-retention", "0.9", "t.jsonl", cwd=tmp_path,
                   env=fake_api.env(), text=True)  # fmt: skip
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    [report] = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert (report["status"], report["stats"]["retention"]) == ("unchanged", 0.0)
    done = run_cli("summarize", *args, "--min-retention", "0", "t.jsonl", cwd=tmp_path,
                   env=fake_api.env(), text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Worked on something." in done.stdout


def test_below_min_retention_nothing_goes_under_output_dir(fake_api, tmp_path: Path) -> None:
    returncode, report, stderr = summarize(
        fake_api, tmp_path, "--keep-user-messages", "0", "--min-retention", "0.9", "--output-dir", "out"
    )
    assert (returncode, report["status"]) == (1, "unchanged"), stderr
    assert [p for p in (tmp_path / "out").rglob("*") if p.is_file()] == []


def test_verify_needs_a_file_to_read_back(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(json.dumps({"role": "user", "content": INSTRUCTION}) + "\n")
    done = run_cli(
        "summarize", "--backend", "digest", "--verify", "-o", "-", "t.jsonl", cwd=tmp_path, text=True
    )
    assert done.returncode == 2
    assert "--verify reads the summarized file back" in done.stderr
