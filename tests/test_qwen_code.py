"""The qwen-code dialect (Qwen Code sessions): detection, the chain Qwen Code resumes along, its compaction
record and its usage, on records written for these tests in the shape Qwen Code 0.15 writes them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.files import write_jsonl

from compactcli.dialects.base import BOUNDARY, NO, PROVES
from compactcli.dialects.qwen_code import QWEN_CODE, QwenChain

SESSION = "5b1f7c3e-0d2a-4c1e-9f7a-2b8e6d4c1a90"


def record(uuid: str, parent: str | None, kind: str, **fields: object) -> dict:
    return {
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SESSION,
        "timestamp": "2026-11-30T09:00:00.000Z",
        "type": kind,
        "cwd": "/work/app",
        "version": "0.15.10",
        **fields,
    }


def user(uuid: str, parent: str | None, text: str) -> dict:
    return record(uuid, parent, "user", message={"role": "user", "parts": [{"text": text}]})


def model(uuid: str, parent: str | None, text: str, **fields: object) -> dict:
    return record(uuid, parent, "assistant", message={"role": "model", "parts": [{"text": text}]}, **fields)


def telemetry(uuid: str, parent: str | None) -> dict:
    event = {"event.name": "qwen-code.api_response", "input_token_count": 10}
    return record(uuid, parent, "system", subtype="ui_telemetry", systemPayload={"uiEvent": event})


def chain_of(records: list[dict]) -> list[str]:
    """The uuids of the records the chain orders, in its order."""
    order = QwenChain(QWEN_CODE)
    for line, each in enumerate(records, 1):
        order.add(line, line * 100, each)
    by_offset = {line * 100: each for line, each in enumerate(records, 1)}
    return [by_offset[offset]["uuid"] for _, offset in order.order()]


# --- detection --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "first",
    [
        user("u1", None, "hi"),
        model("a1", "u1", "hello"),
        telemetry("s1", None),
        record("s2", None, "system", subtype="slash_command", systemPayload={"phase": "invocation"}),
    ],
)
def test_qwen_records_prove_the_dialect(first):
    assert QWEN_CODE.fit(first) == PROVES


@pytest.mark.parametrize(
    "other",
    [
        # Claude Code: the same identity fields, but Messages API content
        {
            "uuid": "u",
            "parentUuid": None,
            "sessionId": "s",
            "type": "user",
            "message": {"role": "user", "content": "x"},
        },
        {"role": "user", "content": "hi"},
        {"type": "response_item", "payload": {"type": "message"}},
        # a Qwen-like record of a type Qwen Code does not write
        {"uuid": "u", "sessionId": "s", "type": "summary", "message": {"role": "user", "parts": []}},
    ],
)
def test_other_records_do_not_fit(other):
    assert QWEN_CODE.fit(other) == NO


# --- the chain --------------------------------------------------------------------------------------------


def test_the_chain_is_the_path_from_the_last_record():
    records = [user("u1", None, "one"), telemetry("t1", "u1"), model("a1", "t1", "two")]
    assert chain_of(records) == ["u1", "t1", "a1"]


def test_a_rewound_branch_is_no_part_of_the_chain():
    """A rewind re-roots the chain at the record before the rewound prompt: what followed is off the path."""
    records = [
        user("u1", None, "first"),
        model("a1", "u1", "answer"),
        user("u2", "a1", "a prompt taken back"),
        model("a2", "u2", "an answer taken back"),
        record("r1", "a1", "system", subtype="rewind", systemPayload={}),
        user("u3", "r1", "instead"),
    ]
    assert chain_of(records) == ["u1", "a1", "r1", "u3"]


def test_records_sharing_a_uuid_stay_together_in_file_order():
    records = [
        user("u1", None, "q"),
        model("a1", "u1", "part one"),
        telemetry("t1", "u1"),
        model("a1", "u1", "two"),
    ]
    # the last record is a1's second part: the path is u1, a1, and t1 (a child of u1) is off it
    assert chain_of(records) == ["u1", "a1", "a1"]
    records.append(user("u2", "a1", "next"))
    assert chain_of(records) == ["u1", "a1", "a1", "u2"]


def test_a_cycle_in_the_links_ends_the_walk():
    records = [user("u1", "u2", "x"), user("u2", "u1", "y")]
    assert chain_of(records) == ["u1", "u2"]


def test_a_chain_in_file_order_is_said_to_be():
    order = QwenChain(QWEN_CODE)
    for line, each in enumerate([user("u1", None, "a"), model("a1", "u1", "b")], 1):
        order.add(line, line, each)
    assert order.in_file_order()
    order.add(3, 3, user("u9", "a1", "c"))
    order.add(4, 4, user("u8", "u1", "d"))  # a branch from the first record: a1 and u9 are off it
    assert not order.in_file_order()


# --- compaction and usage ---------------------------------------------------------------------------------


def compression(uuid: str, parent: str, history: list[dict]) -> dict:
    payload = {"info": {"originalTokenCount": 900, "newTokenCount": 300, "compressionStatus": 1}}
    return record(
        uuid,
        parent,
        "system",
        subtype="chat_compression",
        systemPayload={**payload, "compressedHistory": history},
    )


def test_a_chat_compression_restarts_the_context_with_its_history():
    history = [
        {"role": "user", "parts": [{"text": "<state_snapshot>done</state_snapshot>"}]},
        {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "read_file", "args": {}}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "x"}}}],
        },
    ]
    found = compression("c", "u1", history)
    assert QWEN_CODE.compaction(found) == BOUNDARY
    assert [r["type"] for r in QWEN_CODE.restarted_with(found)] == [
        "user",
        "assistant",
        "assistant",
        "tool_result",
    ]
    assert [r["message"] for r in QWEN_CODE.restarted_with(found)] == history


def test_a_compression_without_history_is_none():
    """Qwen Code skips such a record when it rebuilds the history."""
    empty = record("c", "u1", "system", subtype="chat_compression", systemPayload={"info": {}})
    assert QWEN_CODE.compaction(empty) is None
    assert QWEN_CODE.compaction(telemetry("t", None)) is None


def test_a_compression_with_an_empty_history_replaces_the_history_by_nothing():
    """Qwen Code tests `payload?.compressedHistory`: an empty list is true in JavaScript."""
    cleared = compression("c", "u1", [])
    assert QWEN_CODE.compaction(cleared) == BOUNDARY
    assert QWEN_CODE.restarted_with(cleared) == []


def test_usage_is_the_prompt_and_what_the_model_wrote():
    usage = {
        "promptTokenCount": 10662,
        "candidatesTokenCount": 20,
        "totalTokenCount": 10682,
        "cachedContentTokenCount": 600,
    }
    found = QWEN_CODE.usage(model("a1", "u1", "x", usageMetadata=usage))
    assert found == {
        "input_tokens": 10062,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 600,
        "output_tokens": 20,
    }
    assert QWEN_CODE.usage(model("a1", "u1", "x")) is None
    assert QWEN_CODE.usage(user("u1", None, "x")) is None


def test_records_of_one_uuid_are_one_call():
    first, second = model("a1", "u1", "one"), model("a1", "u1", "two")
    assert QWEN_CODE.call_id(first) == QWEN_CODE.call_id(second) == "a1"
    assert QWEN_CODE.call_id(user("u1", None, "x")) is None


def test_queued_prompts_are_not_the_users_words():
    assert QWEN_CODE.is_user_words(user("u1", None, "fix it"))
    assert not QWEN_CODE.is_user_words({**user("u2", "u1", "nightly check"), "subtype": "cron"})
    assert not QWEN_CODE.is_user_words({**user("u3", "u2", "agent done"), "subtype": "notification"})


def test_link_and_relink():
    each = model("a1", "u1", "x")
    assert QWEN_CODE.link(each) == ("a1", "u1")
    QWEN_CODE.set_parent(each, "c9")
    assert json.loads(json.dumps(each))["parentUuid"] == "c9"


# --- every command, on the sample and on records written here ---------------------------------------------

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "qwen-code" / "session.jsonl"
PLACEHOLDER = "[Previous: used run_shell_command]"


def lines_of(path: Path) -> list[dict]:
    return [json.loads(raw) for raw in path.read_bytes().splitlines()]


def responses(records: list[dict]) -> dict[str, tuple[int, object]]:
    """call id -> (line, output) of every functionResponse in the file, compressed histories included."""
    found: dict[str, tuple[int, object]] = {}
    for line, each in enumerate(records, 1):
        contents = [each["message"]] if "message" in each else []
        contents += (each.get("systemPayload") or {}).get("compressedHistory") or []
        for content in contents:
            for part in content["parts"]:
                if "functionResponse" in part:
                    answer = part["functionResponse"]
                    found[answer["id"]] = (line, answer["response"].get("output", answer["response"]))
    return found


@pytest.fixture
def session(tmp_path: Path) -> Path:
    path = tmp_path / "3c9e41d7-52b8-4f0a-a1e6-7d2f90b4c815.jsonl"
    shutil.copyfile(SAMPLE, path)
    return path


def test_the_sample_is_read_as_qwen_code_and_is_valid(session):
    done = run_cli("validate", "--json", session, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["stats"]["dialect"] == "qwen-code"


def test_micro_clears_old_outputs_and_their_ui_copies_and_nothing_else(session):
    before = session.read_bytes()
    old = lines_of(session)
    done = run_cli("micro", "--keep", "1", session, text=True)
    assert done.returncode == 0, done.stderr
    new = lines_of(session)
    was, now = responses(old), responses(new)
    shell = [
        call
        for call, (line, _) in was.items()
        if old[line - 1]["message"]["parts"][0]["functionResponse"]["name"] == "run_shell_command"
    ]
    assert len(shell) == 3
    assert [now[call][1] for call in shell[:2]] == [PLACEHOLDER] * 2  # the last output is kept
    assert now[shell[2]] == was[shell[2]]
    read = next(
        call
        for call, (line, _) in was.items()
        if old[line - 1]["message"]["parts"][0]["functionResponse"]["name"] == "read_file"
    )
    assert now[read] == was[read]  # Qwen Code's read tool is preserved
    changed = {line for call in shell[:2] for line in [was[call][0]]}
    for line in changed:
        copy = new[line - 1]["toolCallResult"]
        assert copy["resultDisplay"] == PLACEHOLDER and copy["callId"] in shell
    for number, (a, b) in enumerate(
        zip(before.splitlines(), session.read_bytes().splitlines(), strict=True), 1
    ):
        if number not in changed:
            assert a == b, number  # byte for byte
    done = run_cli("micro", "--keep", "1", session, text=True)
    assert "0 files compacted, 1 unchanged" in done.stderr  # idempotent


def test_micro_clears_an_output_inside_a_compressed_history(tmp_path):
    long_output = "Output: " + "x" * 400
    history = [
        {"role": "user", "parts": [{"text": "<state_snapshot>s</state_snapshot>"}]},
        {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "run_shell_command", "args": {}}}]},
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "c1",
                        "name": "run_shell_command",
                        "response": {"output": long_output},
                    }
                }
            ],
        },
    ]
    records = [user("u1", None, "go"), compression("c", "u1", history), user("u2", "c", "next")]
    records += [
        record(
            "a2",
            "u2",
            "assistant",
            message={
                "role": "model",
                "parts": [{"functionCall": {"id": "c2", "name": "grep_search", "args": {}}}],
            },
        ),
        record(
            "r2",
            "a2",
            "tool_result",
            message={
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "c2",
                            "name": "grep_search",
                            "response": {"output": long_output},
                        }
                    }
                ],
            },
        ),
    ]
    path = tmp_path / "s.jsonl"
    write_jsonl(path, records)
    done = run_cli("micro", "--keep", "1", path, text=True)
    assert done.returncode == 0, done.stderr
    found = responses(lines_of(path))
    assert found["c1"] == (2, PLACEHOLDER)
    assert found["c2"] == (5, long_output)
    done = run_cli("validate", path, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_unanswered_call_before_the_next_prompt_is_reported(tmp_path):
    call = {"functionCall": {"id": "c1", "name": "run_shell_command", "args": {}}}
    records = [
        user("u1", None, "go"),
        record("a1", "u1", "assistant", message={"role": "model", "parts": [call]}),
        user("u2", "a1", "and?"),
        model("a2", "u2", "..."),
    ]
    path = tmp_path / "s.jsonl"
    write_jsonl(path, records)
    done = run_cli("validate", "--json", path, text=True)
    assert done.returncode == 1
    assert "missing-tool-result" in done.stdout


def test_estimate_usage_is_the_last_calls_usage_metadata(session):
    last = [r for r in lines_of(session) if r["type"] == "assistant"][-1]["usageMetadata"]
    done = run_cli("estimate", "--method", "usage", "--json", session, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["stats"]["tokens"] == last["promptTokenCount"]


def test_summarize_appends_a_chat_compression_that_carries_the_kept_contents(session):
    """As Qwen Code compresses: every line stays, one record is appended as the child of the last, and its
    compressedHistory is the summary, the acknowledgement, the bridge (the kept part starts with the
    model's call) and the kept Contents."""
    before = session.read_bytes()
    old = lines_of(session)
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "2", session, text=True)
    assert done.returncode == 0, done.stderr
    after = session.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    written = lines_of(session)[-1]
    assert written["type"] == "system" and written["subtype"] == "chat_compression"
    assert written["parentUuid"] == old[-1]["uuid"]
    identity = ("sessionId", "cwd", "version", "gitBranch")
    assert {k: written[k] for k in identity} == {k: old[-1][k] for k in identity}
    history = written["systemPayload"]["compressedHistory"]
    assert history[0]["role"] == "user"
    assert history[0]["parts"][0]["text"].startswith("[Conversation compressed. Transcript: ")
    assert history[1] == {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]}
    assert history[2] == {
        "role": "user",
        "parts": [{"text": "Continue with the prior task using the context above."}],
    }
    # --keep-last 2 keeps the last call with its answer, then the closing message
    messages = [r["message"] for r in old if r["type"] in ("user", "assistant", "tool_result")]
    assert history[3:] == messages[-3:]
    assert "functionCall" in history[3]["parts"][0]
    assert written["systemPayload"]["info"]["compressionStatus"] == 1
    again = run_cli("summarize", "--backend", "digest", "--keep-last", "2", session, text=True)
    assert again.returncode == 0 and session.read_bytes() == after  # nothing left to summarize
    done = run_cli("validate", session, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_estimate_after_summarize_counts_the_compressed_history_and_restore_undoes_it(session):
    def tokens(*options: str) -> dict:
        done = run_cli("estimate", "--json", *options, session, text=True)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[0])["stats"]

    before = session.read_bytes()
    full = tokens("--method", "heuristic")
    assert tokens()["method"] == "usage+heuristic"
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "2", session, text=True)
    assert done.returncode == 0, done.stderr
    compressed = tokens("--method", "heuristic")
    # the context is the compressed history alone: 6 Contents (summary, acknowledgement, bridge, 3 kept)
    assert compressed["messages"] == 6 and full["messages"] > 6
    lines = before.count(b"\n")
    assert compressed["active_from"] == lines + 1 and full["active_from"] < lines  # from the appended record
    # no call is recorded after the compression: usage before it is not the context's
    auto = tokens()
    assert auto["method"] == "heuristic+overhead" and auto["usage"]["calls"] == 0
    # replay reads the appended compression as a recorded one, and ends with the same context
    args = ("--threshold", "100000", "--keep", "100", "--estimator", "heuristic", "--backend", "digest")
    done = run_cli("replay", "--json", *args, session, text=True)
    assert done.returncode == 0, done.stderr
    replayed = json.loads(done.stdout)["stats"]
    assert replayed["compactions"] == {"auto": 0, "manual": 0, "recorded": 2}  # the sample's and this one
    assert replayed["final_tokens"] == compressed["tokens"]
    done = run_cli("restore", session, text=True)
    assert done.returncode == 0, done.stderr
    assert session.read_bytes() == before


def test_micro_after_summarize_counts_a_kept_result_once(session):
    """A kept result is in the file twice (its own record and the compression): --keep counts calls, so
    --keep 2 keeps the outputs of the last two calls, the copies of the kept one counted once."""
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "2", session, text=True)
    assert done.returncode == 0, done.stderr
    before = responses(lines_of(session))  # call id -> its last place
    by_place = sorted(before, key=lambda call: before[call][0])
    last, second = by_place[-1], by_place[-2]
    done = run_cli("micro", "--keep", "2", session, text=True)
    assert done.returncode == 0, done.stderr
    after = responses(lines_of(session))
    assert after[last] == before[last] and after[second] == before[second]
    assert PLACEHOLDER in [after[call][1] for call in by_place[:-2]]  # older shell outputs are cleared
    done = run_cli("validate", session, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_micro_leaves_a_rewound_branch_as_it_is(tmp_path):
    """The rewound turns are no part of what Qwen Code resumes: micro neither counts nor clears them."""
    output = "Output: " + "y" * 400

    def answered(n: int, parent: str) -> list[dict]:
        call = {"functionCall": {"id": f"c{n}", "name": "run_shell_command", "args": {}}}
        answer = {
            "functionResponse": {"id": f"c{n}", "name": "run_shell_command", "response": {"output": output}}
        }
        return [
            record(f"a{n}", parent, "assistant", message={"role": "model", "parts": [call]}),
            record(f"r{n}", f"a{n}", "tool_result", message={"role": "user", "parts": [answer]}),
        ]

    records = [user("u1", None, "go"), *answered(1, "u1"), user("u2", "r1", "taken back"), *answered(2, "u2")]
    records += [record("w", "r1", "system", subtype="rewind", systemPayload={}), user("u3", "w", "instead")]
    records += answered(3, "u3")
    path = tmp_path / "s.jsonl"
    write_jsonl(path, records)
    done = run_cli("micro", "--keep", "1", path, text=True)
    assert done.returncode == 0, done.stderr
    found = responses(lines_of(path))
    assert found["c1"][1] == PLACEHOLDER  # on the chain, older than the last one
    assert found["c2"][1] == output  # on the rewound branch
    assert found["c3"][1] == output  # the last on the chain


def test_verify_measures_what_qwen_code_resumes_with_not_the_records_left_before_it(session, tmp_path):
    """Every summarized record stays in the file; retention is measured on the compression (what Qwen Code
    resumes with), the same as on a file holding the compression alone."""
    original = tmp_path / "original.jsonl"
    shutil.copyfile(session, original)
    done = run_cli("summarize", "--backend", "digest", "--verify", "--json", session, text=True)
    assert done.returncode == 0, done.stderr
    retention = json.loads(done.stdout.splitlines()[0])["stats"]["retention"]
    alone = tmp_path / "alone.jsonl"
    alone.write_bytes(session.read_bytes().splitlines(keepends=True)[-1])
    probed = json.loads(run_cli("probe", "--json", original, alone, text=True).stdout)["stats"]
    assert retention == probed["retention"] < 1
    assert probed["replaced_records"] > 0


def test_keep_images_reaches_the_images_of_a_compressed_history(tmp_path):
    # What Qwen Code resumes with after a compression is its history: a screenshot kept there is sent again
    # on every call, as the one in the record before the compression is not.
    png = "iVBORw0KGgo" + "A" * 4000
    image = {"inlineData": {"mimeType": "image/png", "data": png}}
    call = {"functionCall": {"id": "c1", "name": "take_screenshot", "args": {}}}
    answer = {"functionResponse": {"id": "c1", "name": "take_screenshot", "response": {"output": "ok"}}}
    history = [
        {"role": "user", "parts": [{"text": "<state_snapshot>s</state_snapshot>"}, image]},
        {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
        {"role": "model", "parts": [call]},
        {"role": "user", "parts": [{"functionResponse": {**answer["functionResponse"], "parts": [image]}}]},
    ]
    records = [user("u1", None, "go"), compression("c", "u1", history), user("u2", "c", "next")]
    path = tmp_path / "s.jsonl"
    write_jsonl(path, records)
    run = run_cli("micro", "--keep-images", "0", path, cwd=tmp_path, text=True)
    assert run.returncode == 0, run.stderr
    kept = lines_of(path)[1]["systemPayload"]["compressedHistory"]
    placeholder = {"text": "[image removed: image/png, 3,008 bytes]"}
    assert kept[0]["parts"] == [{"text": "<state_snapshot>s</state_snapshot>"}, placeholder]
    assert kept[3]["parts"] == [{"functionResponse": {**answer["functionResponse"], "parts": [placeholder]}}]
    assert png not in path.read_text()
    assert run_cli("validate", path).returncode == 0


def test_the_summary_and_bridge_of_qwen_codes_own_compression_are_not_the_users_words(session):
    # The sample holds a compression Qwen Code wrote: its <state_snapshot> summary as the user's Content and
    # the "Continue with the prior task" bridge. A digest built on it says it starts with an earlier summary
    # and never lists either as what the user wrote.
    done = run_cli("summarize", "--backend", "digest", "--keep-last", "2", session, text=True)
    assert done.returncode == 0, done.stderr
    summary = lines_of(session)[-1]["systemPayload"]["compressedHistory"][0]["parts"][0]["text"]
    assert "## Earlier summary (the conversation starts with it)\n> <state_snapshot>" in summary
    assert "(Compaction 2: this summary builds on the one before it.)" in summary
    assert "Continue with the prior task" not in summary
    users = summary[summary.index("## The user's own messages") :]
    assert "<state_snapshot>" not in users and "Also sort ties alphabetically." in users
