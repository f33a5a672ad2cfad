"""micro's opt-in strategies (docs/design.md, "Micro strategies") on transcripts written out by hand below:
what each clears or drops, what it keeps, that tool_use/tool_result pairs stay whole, that a second run
changes nothing, that `compactcli validate` passes on the output, and that the manifest names them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import invoke
from helpers.files import write_jsonl

from compactcli.dialects.base import MAIN
from compactcli.dialects.claude_code import ChainOrder, SidechainTracker

LONG = "def parse(text):\n    return [line.split(',') for line in text.splitlines()]\n" * 6  # 474 chars
LONG2 = "class Parser:\n    separator = ','\n" * 12  # 420 chars
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4//8/AAX+Av4N70a4AAAAAElFTkSuQmCC"  # 69 bytes
)
PNG_BYTES = 69


write = write_jsonl


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def micro(source: Path, *options: object, dialect: str | None = None) -> Path:
    """micro -o beside the source; the run must succeed, the output validate, and a second run with
    the same options change nothing."""
    out = source.with_name(source.stem + ".out.jsonl")
    again = source.with_name(source.stem + ".again.jsonl")
    with_dialect = ("--dialect", dialect) if dialect else ()
    result = invoke("micro", source, "-o", out, *with_dialect, *options)
    assert result.exit_code == 0, result.output
    check = invoke("validate", *with_dialect, out)
    assert check.exit_code == 0, check.output
    result = invoke("micro", out, "-o", again, *with_dialect, *options)
    assert result.exit_code == 0, result.output
    assert again.read_bytes() == out.read_bytes(), "a second run changed the output"
    return out


# -- Claude Code: a session with progress, thinking, a finished sub-agent and two reads of one file ------


def cc(uuid: str, parent: str | None, kind: str, **fields: object) -> dict:
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "s-1",
        "version": "2.1.9",
        "type": kind,
    }
    record.update(fields)
    record["uuid"] = uuid
    return record


def said(uuid: str, parent: str | None, content: object, **fields: object) -> dict:
    return cc(uuid, parent, "user", message={"role": "user", "content": content}, **fields)


def answer(uuid: str, parent: str, message_id: str, *blocks: dict) -> dict:
    message = {"id": message_id, "role": "assistant", "model": "claude-opus-4-1", "content": list(blocks)}
    return cc(uuid, parent, "assistant", message=message)


def use(tool_id: str, name: str, **arguments: object) -> dict:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": arguments}


def result(uuid: str, parent: str, tool_id: str, content: object) -> dict:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    return said(uuid, parent, [block], toolUseResult={"copy": content})


THINK = {"type": "thinking", "thinking": "The parser splits on commas.", "signature": "EqQBCkgI"}
SESSION = [
    said("u1", None, "Fix the parser in src/p.py."),  # 1
    cc("p1", "u1", "progress", data={"type": "hook_progress", "hookEvent": "UserPromptSubmit"}),  # 2
    answer("a1", "p1", "m1", THINK),  # 3  thinking of an earlier turn
    answer("a2", "a1", "m1", use("t1", "Read", file_path="/src/p.py")),  # 4
    result("r1", "a2", "t1", LONG),  # 5  superseded by the Read at line 10
    answer("a3", "r1", "m2", use("t2", "Task", description="tests", prompt="Survey the tests.")),  # 6
    said("s1", None, "Survey the tests.", isSidechain=True),  # 7  the sub-agent: finished at line 9
    answer("s2", "s1", "m9", {"type": "text", "text": "There are 3 tests."}) | {"isSidechain": True},  # 8
    result("r2", "a3", "t2", [{"type": "text", "text": "There are 3 tests."}]),  # 9
    answer("a4", "r2", "m3", use("t3", "Read", file_path="/src/p.py")),  # 10
    result("r3", "a4", "t3", LONG2),  # 11 superseded by the Edit at line 15
    answer("a5", "r3", "m4", {"type": "text", "text": "Fixed."}),  # 12 a response with no tool: the turn ends
    said("u2", "a5", "Now add a test."),  # 13 the current turn starts
    answer("a6", "u2", "m5", THINK),  # 14 thinking of the current turn: kept
    answer("a7", "a6", "m5", use("t4", "Edit", file_path="/src/p.py", old_string="a", new_string="b")),  # 15
    result("r4", "a7", "t4", "The file /src/p.py has been updated."),  # 16
]


@pytest.fixture()
def session(tmp_path: Path) -> Path:
    return write(tmp_path / "session.jsonl", SESSION)


def by_uuid(records: list[dict]) -> dict[str, dict]:
    return {record["uuid"]: record for record in records}


def test_without_a_strategy_the_default_rule_only(session: Path) -> None:
    out = by_uuid(read(micro(session)))
    assert len(out) == len(SESSION)
    # Four results, the last three kept; the first is a Read (preserved).
    assert out["r1"]["message"]["content"][0]["content"] == LONG
    assert out["r3"]["message"]["content"][0]["content"] == LONG2


def test_dedupe_reads_clears_superseded_reads_preserved_tool_and_last_three_included(session: Path) -> None:
    out = by_uuid(read(micro(session, "--dedupe-reads")))
    assert out["r1"]["message"]["content"][0]["content"] == "[Previous: used Read]"  # read again later
    assert out["r3"]["message"]["content"][0]["content"] == "[Previous: used Read]"  # written later
    assert "toolUseResult" not in out["r1"] and "toolUseResult" not in out["r3"]
    assert out["r4"] == SESSION[15]  # the Edit's own result is no read
    assert out["r2"] == SESSION[8]
    assert [b["id"] for b in out["a2"]["message"]["content"]] == ["t1"]  # pairs untouched


def test_dedupe_reads_keeps_a_read_of_another_part_of_the_file(tmp_path: Path) -> None:
    records = [
        said("u1", None, "Look at p.py."),
        answer("a1", "u1", "m1", use("t1", "Read", file_path="/src/p.py", offset=1, limit=50)),
        result("r1", "a1", "t1", LONG),
        answer("a2", "r1", "m2", use("t2", "Read", file_path="/src/p.py", offset=51, limit=50)),
        result("r2", "a2", "t2", LONG2),
        answer("a3", "r2", "m3", use("t3", "Read", file_path="/src/q.py")),
        result("r3", "a3", "t3", LONG2),
    ]
    out = by_uuid(read(micro(write(tmp_path / "parts.jsonl", records), "--dedupe-reads", "--keep", "0")))
    assert out == by_uuid(records)  # other parts, another file: nothing superseded (Read is preserved)


def test_drop_progress_drops_progress_and_relinks_its_child(session: Path) -> None:
    out = read(micro(session, "--drop-progress"))
    assert [r["uuid"] for r in out] == [r["uuid"] for r in SESSION if r["type"] != "progress"]
    assert by_uuid(out)["a1"]["parentUuid"] == "u1"  # was p1
    unchanged = [r for r in out if r["uuid"] != "a1"]
    assert unchanged == [r for r in SESSION if r["uuid"] not in ("p1", "a1")]


def test_drop_sidechains_drops_a_finished_sub_agent(session: Path) -> None:
    out = read(micro(session, "--drop-sidechains"))
    assert [r["uuid"] for r in out] == [r["uuid"] for r in SESSION if r["uuid"] not in ("s1", "s2")]
    assert by_uuid(out)["r2"] == SESSION[8]  # the Task's result is the conversation's: kept


def test_drop_sidechains_keeps_a_sub_agent_still_running(tmp_path: Path) -> None:
    running = SESSION[:8]  # the Task has no result yet
    out = read(micro(write(tmp_path / "running.jsonl", running), "--drop-sidechains", "--keep", "9"))
    assert out == running


def test_drop_thinking_drops_earlier_turns_thinking_only(session: Path) -> None:
    out = read(micro(session, "--drop-thinking"))
    assert [r["uuid"] for r in out] == [r["uuid"] for r in SESSION if r["uuid"] != "a1"]
    assert by_uuid(out)["a2"]["parentUuid"] == "p1"  # was a1
    assert by_uuid(out)["a6"] == SESSION[13]  # the current turn's thinking, signature and all


def test_drops_together_relink_past_every_dropped_record(session: Path) -> None:
    out = by_uuid(read(micro(session, "--drop-thinking", "--drop-progress", "--drop-sidechains")))
    assert set(out) == {r["uuid"] for r in SESSION} - {"a1", "p1", "s1", "s2"}
    assert out["a2"]["parentUuid"] == "u1"  # a1 and p1 both gone


def test_the_manifest_names_the_strategies(session: Path, tmp_path: Path) -> None:
    in_place = tmp_path / "in-place.jsonl"
    shutil.copy(session, in_place)
    result = invoke("micro", in_place, "--drop-progress", "--keep-images", "2", "--truncate", "10:5")
    assert result.exit_code == 0, result.output
    lines = (tmp_path / ".transcripts" / "manifest.jsonl").read_text().splitlines()
    options = json.loads(lines[-1])["options"]
    assert options["strategies"] == ["keep-images=2", "truncate=10:5", "drop-progress"]


# -- Anthropic: images in a user message and in tool results; --truncate --------------------------------


def image(data: str = PNG) -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def shot(tool_id: str) -> dict:
    return {"role": "assistant", "content": [use(tool_id, "screenshot")]}


def shown(tool_id: str, *blocks: dict) -> dict:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": list(blocks)}],
    }


PICTURES = [
    {"role": "user", "content": [{"type": "text", "text": "Why is this red?"}, image()]},  # 3 images before
    shot("t1"),
    shown("t1", {"type": "text", "text": "page"}, image(), image(PNG + "AAAA")),
    shot("t2"),
    shown("t2", image()),  # the last image
    {"role": "assistant", "content": [{"type": "text", "text": "A CSS rule."}]},
]
GONE = f"[image removed: image/png, {PNG_BYTES:,} bytes]"


def test_keep_images_keeps_the_last_n_anywhere(tmp_path: Path) -> None:
    out = read(micro(write(tmp_path / "pictures.jsonl", PICTURES), "--keep-images", "2"))
    assert out[0]["content"] == [{"type": "text", "text": "Why is this red?"}, {"type": "text", "text": GONE}]
    page = out[2]["content"][0]["content"]
    assert page == [{"type": "text", "text": "page"}, {"type": "text", "text": GONE}, image(PNG + "AAAA")]
    assert out[4] == PICTURES[4]
    assert [b["tool_use_id"] for m in out for b in m["content"] if b.get("type") == "tool_result"] == [
        "t1",
        "t2",
    ]


def test_keep_images_zero_keeps_none(tmp_path: Path) -> None:
    out = read(micro(write(tmp_path / "pictures.jsonl", PICTURES), "--keep-images", "0"))
    text = json.dumps(out)
    assert '"type": "image"' not in text
    assert text.count("[image removed: image/png, ") == 4


def test_truncate_keeps_head_and_tail_and_says_how_much_was_cut(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": "Run it."},
        {"role": "assistant", "content": [use("t1", "bash", command="make")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": LONG}]},
    ]
    out = read(micro(write(tmp_path / "t.jsonl", records), "--keep", "0", "--truncate", "10:6"))
    cut = len(LONG) - 16
    assert out[2]["content"][0]["content"] == f"def parse(\n[... {cut} characters truncated ...]\nes()]\n"


def test_truncate_leaves_a_result_it_would_not_shorten(tmp_path: Path) -> None:
    text = "x" * 140  # 140 - 60 - 60 = 20 characters to cut: the mark is longer
    records = [
        {"role": "assistant", "content": [use("t1", "bash", command="make")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": text}]},
    ]
    out = read(micro(write(tmp_path / "t.jsonl", records), "--keep", "0", "--truncate", "60:60"))
    assert out == records


def test_truncate_is_a_usage_error_without_a_colon(tmp_path: Path) -> None:
    result = invoke("micro", write(tmp_path / "t.jsonl", PICTURES), "--truncate", "200")
    assert result.exit_code == 2
    assert "HEAD:TAIL" in result.output


# -- OpenAI and Codex: images by data URL; Codex reads by sed and writes by apply_patch --------------------

DATA_URL = f"data:image/jpeg;base64,{PNG}"


def test_openai_keep_images_replaces_image_url_parts(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": DATA_URL}}]},
        {"role": "assistant", "content": "A cat."},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": DATA_URL}}]},
    ]
    out = read(micro(write(tmp_path / "o.jsonl", records), "--keep-images", "1", dialect="openai"))
    assert out[0]["content"] == [
        {"type": "text", "text": f"[image removed: image/jpeg, {PNG_BYTES:,} bytes]"}
    ]
    assert out[2] == records[2]


def item(payload: dict) -> dict:
    return {"timestamp": "2026-01-01T00:00:00.000Z", "type": "response_item", "payload": payload}


def shell(call_id: str, command: str) -> dict:
    arguments = json.dumps({"cmd": command, "workdir": "/repo"})
    return item({"type": "function_call", "name": "exec_command", "arguments": arguments, "call_id": call_id})


def output(call_id: str, text: object) -> dict:
    return item({"type": "function_call_output", "call_id": call_id, "output": text})


ROLLOUT = [
    {
        "timestamp": "2026-01-01T00:00:00.000Z",
        "type": "session_meta",
        "payload": {"id": "r-1", "cwd": "/repo"},
    },
    item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix app.py"}]}),
    shell("c1", "sed -n '1,200p' app.py"),  # a read of /repo/app.py (lines 1-200)
    output("c1", LONG),  # superseded by the patch below
    shell("c2", "cat app.py | head"),  # a pipe: no read
    output("c2", LONG2),
    item(
        {
            "type": "custom_tool_call",
            "name": "apply_patch",
            "call_id": "c3",
            "input": "*** Begin Patch\n*** Update File: /repo/app.py\n@@\n-a\n+b\n*** End Patch",
        }
    ),
    output("c3", "Success. Updated the following files:\nM /repo/app.py"),
]


def test_codex_dedupe_reads_sees_sed_reads_and_apply_patch_writes(tmp_path: Path) -> None:
    source = write(tmp_path / "rollout.jsonl", ROLLOUT)
    out = read(micro(source, "--dedupe-reads", "--keep", "3"))
    assert out[3]["payload"]["output"] == "[Previous: used exec_command]"
    assert out[5] == ROLLOUT[5]  # `cat app.py | head` is no plain read
    assert [r for n, r in enumerate(out) if n != 3] == [r for n, r in enumerate(ROLLOUT) if n != 3]


def test_codex_keep_images_replaces_input_images(tmp_path: Path) -> None:
    picture = {"type": "input_image", "image_url": DATA_URL}
    records = [
        ROLLOUT[0],
        item({"type": "message", "role": "user", "content": [picture, {"type": "input_text", "text": "Hi"}]}),
        item({"type": "message", "role": "user", "content": [picture]}),
    ]
    out = read(micro(write(tmp_path / "rollout.jsonl", records), "--keep-images", "1"))
    gone = {"type": "input_text", "text": f"[image removed: image/jpeg, {PNG_BYTES:,} bytes]"}
    assert out[1]["payload"]["content"] == [gone, {"type": "input_text", "text": "Hi"}]
    assert out[2] == records[2]


# -- replay runs the same strategies before each model call --------------------------------------------


def test_replay_applies_the_strategies_to_its_context(session: Path, tmp_path: Path) -> None:
    plain, strategic = tmp_path / "plain.jsonl", tmp_path / "strategic.jsonl"
    rule = ("--keep", "0", "--no-preserve")
    result = invoke("replay", session, *rule, "-o", plain)
    assert result.exit_code == 0, result.output
    result = invoke("replay", session, *rule, "--truncate", "10:5", "--drop-thinking", "-o", strategic)
    assert result.exit_code == 0, result.output
    plain_records, records = by_uuid(read(plain)), by_uuid(read(strategic))
    assert plain_records["r1"]["message"]["content"][0]["content"] == "[Previous: used Read]"
    cut = f"def parse(\n[... {len(LONG) - 15} characters truncated ...]\ns()]\n"
    assert records["r1"]["message"]["content"][0]["content"] == cut
    assert "a1" in plain_records and "a1" not in records  # the earlier turn's thinking
    assert records["a6"] == SESSION[13]  # the current turn's


def test_previews_name_what_the_strategies_change(session: Path) -> None:
    result = invoke("micro", session, "--dry-run", "--drop-progress", "--keep", "9")
    assert result.exit_code == 0, result.output
    assert f"{session}:2: drop the record" in result.output
    assert f"{session}:3: point the record at the nearest ancestor kept" in result.output
    diff = invoke("micro", session, "--diff", "--drop-progress", "--keep", "9")
    assert "@@ -2,1 +2,0 @@" in diff.output
    assert '+{"parentUuid": "u1"' in diff.output
    report = invoke(
        "micro", session, "-v", "-o", session.with_name("out.jsonl"), "--drop-progress", "--keep", "9"
    )
    assert "1 records dropped, 1 re-linked" in report.output


def test_codex_patch_paths_are_resolved_against_the_turns_folder(tmp_path: Path) -> None:
    arguments = json.dumps({"file_path": "/repo/src/app.py"})
    patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** End Patch"
    records = [
        {"timestamp": "2026-01-01T00:00:00.000Z", "type": "turn_context", "payload": {"cwd": "/repo"}},
        item({"type": "function_call", "name": "read_file", "arguments": arguments, "call_id": "c1"}),
        output("c1", LONG),  # read_file is preserved, but the patch below makes this copy stale
        item({"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2", "input": patch}),
        output("c2", "Success. Updated the following files:\nM src/app.py"),
    ]
    source = write(tmp_path / "rollout.jsonl", records)
    out = read(micro(source, "--dedupe-reads"))
    assert out[2]["payload"]["output"] == "[Previous: used read_file]"
    assert [r for n, r in enumerate(out) if n != 2] == [r for n, r in enumerate(records) if n != 2]
    elsewhere = [{**records[0], "payload": {"cwd": "/other"}}, *records[1:]]
    assert read(micro(write(tmp_path / "elsewhere.jsonl", elsewhere), "--dedupe-reads")) == elsewhere


# -- --dedupe-reads: a call whose result is an error read or changed nothing ----------------------------

FAILED_EDIT = "<tool_use_error>String to replace not found in file.\nString: zzz</tool_use_error>"


def failed(uuid: str, parent: str, tool_id: str, content: str) -> dict:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": True}
    return said(uuid, parent, [block], toolUseResult=f"Error: {content}")


@pytest.mark.parametrize(
    "call",
    [
        use("t2", "Edit", file_path="/src/p.py", old_string="zzz", new_string="b"),
        use("t2", "Write", file_path="/src/p.py", content="x"),
        use("t2", "Read", file_path="/src/p.py"),  # a read that failed put no newer copy in the context
    ],
    ids=["edit", "write", "read"],
)
def test_claude_code_a_failed_call_does_not_make_a_read_stale(tmp_path: Path, call: dict) -> None:
    records = [
        said("u1", None, "Fix p.py."),
        answer("a1", "u1", "m1", use("t1", "Read", file_path="/src/p.py")),
        result("r1", "a1", "t1", LONG),
        answer("a2", "r1", "m2", call),
        failed("r2", "a2", "t2", FAILED_EDIT),
    ]
    out = read(micro(write(tmp_path / "failed.jsonl", records), "--dedupe-reads", "--keep", "0"))
    assert out == records  # the file never changed: its only copy stays


def test_claude_code_a_write_that_worked_after_one_that_failed_still_counts(tmp_path: Path) -> None:
    records = [
        said("u1", None, "Fix p.py."),
        answer("a1", "u1", "m1", use("t1", "Read", file_path="/src/p.py")),
        result("r1", "a1", "t1", LONG),
        answer("a2", "r1", "m2", use("t2", "Edit", file_path="/src/p.py", old_string="zzz", new_string="b")),
        failed("r2", "a2", "t2", FAILED_EDIT),
        answer("a3", "r2", "m3", use("t3", "Edit", file_path="/src/p.py", old_string="a", new_string="b")),
        result("r3", "a3", "t3", "The file /src/p.py has been updated."),
    ]
    out = by_uuid(read(micro(write(tmp_path / "worked.jsonl", records), "--dedupe-reads", "--keep", "9")))
    assert out["r1"]["message"]["content"][0]["content"] == "[Previous: used Read]"
    assert out["r2"] == records[4]


def test_anthropic_a_failed_edit_does_not_make_a_read_stale(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": "Fix p.py."},
        {"role": "assistant", "content": [use("t1", "read_file", path="/src/p.py")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": LONG}]},
        {"role": "assistant", "content": [use("t2", "edit_file", path="/src/p.py", old="zzz", new="b")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": FAILED_EDIT}]},
    ]
    records[4]["content"][0]["is_error"] = True
    out = read(micro(write(tmp_path / "failed.jsonl", records), "--dedupe-reads", "--keep", "0"))
    assert out == records
    worked = [*records[:4], {**records[4], "content": [{**records[4]["content"][0], "is_error": False}]}]
    out = read(micro(write(tmp_path / "worked.jsonl", worked), "--dedupe-reads", "--keep", "9"))
    assert out[2]["content"][0]["content"] == "[Previous: used read_file]"


PATCH = "*** Begin Patch\n*** Update File: /repo/app.py\n@@\n-zzz\n+b\n*** End Patch"
VERIFY_FAILED = "apply_patch verification failed: Failed to find expected lines in /repo/app.py:\nzzz"
PATCHED = "Success. Updated the following files:\nM /repo/app.py\n"
CUSTOM_PATCH = item({"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2", "input": PATCH})
SHELL_PATCH = shell("c2", f"apply_patch <<'EOF'\n{PATCH}\nEOF")
READ_AGAIN = shell("c2", "sed -n '1,200p' app.py")


def custom_output(text: str) -> dict:
    return item({"type": "custom_tool_call_output", "call_id": "c2", "output": text})


def json_output(text: str, code: int) -> dict:
    return custom_output(json.dumps({"output": text, "metadata": {"exit_code": code}}))


@pytest.mark.parametrize(
    ("call", "answer_", "stale"),
    [
        # The forms Codex writes: a custom tool's own text, a JSON output with metadata, an exec's header.
        (CUSTOM_PATCH, custom_output(VERIFY_FAILED), False),
        (CUSTOM_PATCH, json_output("error: bad hunk\n", 1), False),
        (SHELL_PATCH, output("c2", "Chunk ID: 1a2b3c\nProcess exited with code 1\nOutput:\nno\n"), False),
        (SHELL_PATCH, output("c2", "Exit code: 1\nWall time: 0.1 seconds\nOutput:\nInvalid patch\n"), False),
        (READ_AGAIN, output("c2", "Process exited with code 2\nOutput:\nsed: app.py: No such file\n"), False),
        # ...and the same calls when they worked; an exit code inside the output is the command's text.
        (CUSTOM_PATCH, json_output(PATCHED, 0), True),
        (
            SHELL_PATCH,
            output("c2", "Chunk ID: 1a2b3c\nProcess exited with code 0\nOutput:\n" + PATCHED),
            True,
        ),
        (READ_AGAIN, output("c2", "Exit code: 0\nOutput:\nExit code: 1\n" + LONG2), True),
    ],
    ids=[
        "verification-failed",
        "json-exit-1",
        "exec-exit-1",
        "old-exec-exit-1",
        "read-failed",
        "json-exit-0",
        "exec-exit-0",
        "read-again",
    ],
)
def test_codex_a_failed_patch_or_read_does_not_make_a_read_stale(
    tmp_path: Path, call: dict, answer_: dict, stale: bool
) -> None:
    first = [shell("c1", "sed -n '1,200p' app.py"), output("c1", LONG)]
    records = [*ROLLOUT[:2], *first, call, answer_]
    out = read(micro(write(tmp_path / "rollout.jsonl", records), "--dedupe-reads", "--keep", "9"))
    assert out[3]["payload"]["output"] == ("[Previous: used exec_command]" if stale else LONG)
    assert out[4:] == records[4:]


# -- a compaction hangs from the history before it by logicalParentUuid ---------------------------------

COMPACTED = [
    said("u1", None, "Fix the parser."),  # 0
    answer("a1", "u1", "m1", {"type": "text", "text": "Done."}),  # 1
    cc("p1", "a1", "progress", data={"type": "hook_progress", "hookEvent": "Stop"}),  # 2
    said("x1", "p1", "Try another way."),  # 3 abandoned: the user went back to p1 and compacted there
    answer("x2", "x1", "m2", {"type": "text", "text": "Another way."}),  # 4
    cc(  # 5
        "b1",
        None,
        "system",
        subtype="compact_boundary",
        content="Conversation compacted",
        logicalParentUuid="p1",
        compactMetadata={"trigger": "manual", "preTokens": 120},
    ),
    said("s1", "b1", "This session is being continued.", isCompactSummary=True),  # 6
    said("u2", "s1", "Now add a test."),  # 7
    answer("a2", "u2", "m3", {"type": "text", "text": "Added."}),  # 8
]


def chain_view(path: Path) -> list[str]:
    """The conversation as Claude Code's chain gives it (ChainOrder), by uuid."""
    records = read(path)
    order = ChainOrder(SidechainTracker())
    for line, record in enumerate(records):
        assert order.add(line, 0, record) == MAIN
    return [records[line]["uuid"] for line, _ in order.order()]


def test_drop_progress_relinks_a_compaction_whose_logical_parent_goes(tmp_path: Path) -> None:
    source = write(tmp_path / "compacted.jsonl", COMPACTED)
    out = micro(source, "--drop-progress", "--keep", "9")  # validates too
    records = by_uuid(read(out))
    assert "p1" not in records
    assert records["b1"] == {**COMPACTED[5], "logicalParentUuid": "a1"}  # parentUuid stays null
    assert records["x1"]["parentUuid"] == "a1"
    # The chain reads the same conversation, less the record dropped: not the abandoned branch.
    assert chain_view(source) == ["u1", "a1", "p1", "b1", "s1", "u2", "a2"]
    assert chain_view(out) == ["u1", "a1", "b1", "s1", "u2", "a2"]
    assert invoke("micro", out, "--drop-progress", "--keep", "9", "--check").exit_code == 0
