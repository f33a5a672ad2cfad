"""Layer 1 rules with the reference agent's numbers, on hand-built conversations."""

from __future__ import annotations

import io
import json

import pytest

from compactcli import dialects
from compactcli.layers.micro import _LIVE_NAMES, Facts, MicroIndex, MicroOptions, ResultFact, apply, plan
from compactcli.pipelines.micro_file import analyze

BIG = "x" * 500


def anthropic_conversation(results: list[tuple[str, str, str]]) -> list[dict]:
    """One assistant tool_use + one user tool_result per (id, tool name, content)."""
    records: list[dict] = [{"role": "user", "content": "fix the bug"}]
    for tool_id, name, content in results:
        records.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": {}}]}
        )
        records.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": content}]}
        )
    return records


def run_plan(records: list[dict], dialect: str = "anthropic", **options) -> dict[int, list[tuple[int, str]]]:
    micro_options = MicroOptions(**options)
    index = MicroIndex(dialects.get(dialect), placeholder=micro_options.placeholder)
    for number, record in enumerate(records, 1):
        index.add(number, record)
    return plan(index, micro_options)


def cleared_lines(records, dialect="anthropic", **options) -> set[int]:
    return set(run_plan(records, dialect, **options))


def test_keeps_last_three_and_clears_the_rest():
    records = anthropic_conversation([(f"t{i}", "bash", BIG) for i in range(5)])
    # results sit on lines 3, 5, 7, 9, 11; the last three stay.
    assert cleared_lines(records) == {3, 5}


def test_at_most_keep_results_changes_nothing():
    records = anthropic_conversation([(f"t{i}", "bash", BIG) for i in range(3)])
    assert cleared_lines(records) == set()


def test_hundred_chars_kept_hundred_and_one_cleared():
    records = anthropic_conversation(
        [("a", "bash", "y" * 100), ("b", "bash", "y" * 101)] + [(f"k{i}", "bash", BIG) for i in range(3)]
    )
    assert cleared_lines(records) == {5}


def test_read_file_and_read_preserved_by_default():
    records = anthropic_conversation(
        [("a", "read_file", BIG), ("b", "Read", BIG), ("c", "grep", BIG)]
        + [(f"k{i}", "bash", BIG) for i in range(3)]
    )
    assert cleared_lines(records) == {7}
    assert cleared_lines(records, preserve=frozenset()) == {3, 5, 7}
    assert cleared_lines(records, preserve=frozenset({"grep"})) == {3, 5}


def test_placeholder_text_and_unknown_tool():
    records = anthropic_conversation([(f"t{i}", "bash", BIG) for i in range(4)])
    # a result whose tool_use is nowhere in the file
    records.insert(
        1, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zz", "content": BIG}]}
    )
    clears = run_plan(records)
    assert clears[2] == [(0, "[Previous: used unknown]")]
    assert clears[4] == [(0, "[Previous: used bash]")]


def test_custom_placeholder_keeps_other_braces():
    records = anthropic_conversation([(f"t{i}", "bash", BIG) for i in range(4)])
    assert run_plan(records, placeholder="{x} <{tool_name}>")[3] == [(0, "{x} <bash>")]


def test_list_content_kept_unless_clear_multimodal():
    image = [{"type": "text", "text": BIG}, {"type": "image", "source": {"type": "base64", "data": "AAAA"}}]
    records = anthropic_conversation(
        [("a", "screenshot", image)] + [(f"k{i}", "bash", BIG) for i in range(3)]
    )
    assert cleared_lines(records) == set()
    assert cleared_lines(records, clear_multimodal=True) == {3}


def test_keep_zero_clears_all():
    records = anthropic_conversation([(f"t{i}", "bash", BIG) for i in range(2)])
    assert cleared_lines(records, keep=0) == {3, 5}


def test_tool_name_from_stringified_block():
    block = "ToolUseBlock(id='toolu_01', caller=None, input={'command': 'ls'}, name='bash', type='tool_use')"
    records = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [block]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": BIG}]},
    ] + anthropic_conversation([(f"k{i}", "bash", BIG) for i in range(3)])[1:]
    assert run_plan(records)[3] == [(0, "[Previous: used bash]")]


def test_stringified_read_file_is_preserved():
    block = (
        "ToolUseBlock(id='toolu_01', caller=None, input={'path': 'a.py'}, name='read_file', type='tool_use')"
    )
    records = [
        {"role": "assistant", "content": [block]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": BIG}]},
    ] + anthropic_conversation([(f"k{i}", "bash", BIG) for i in range(3)])[1:]
    assert cleared_lines(records) == set()


def test_tool_name_from_openai_both_shapes():
    records = [
        {"role": "system", "content": "be brief"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}},
                {"id": "c2", "name": "grep", "arguments": {"q": "x"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": BIG},
        {"role": "tool", "tool_call_id": "c2", "content": BIG},
        {"role": "tool", "tool_call_id": "c3", "content": BIG},
        {"role": "tool", "tool_call_id": "c4", "content": BIG},
        {"role": "tool", "tool_call_id": "c5", "content": BIG},
    ]
    clears = run_plan(records, "openai")
    assert clears == {3: [(-1, "[Previous: used shell]")], 4: [(-1, "[Previous: used grep]")]}


def claude_code_record(kind: str, uuid: str, parent: str | None, content, **extra) -> dict:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "s1",
        "message": {"role": kind, "content": content},
        **extra,
    }


def test_claude_code_names_and_tool_use_result_dropped():
    records = []
    parent = None
    for i in range(4):
        use = claude_code_record(
            "assistant", f"a{i}", parent, [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {}}]
        )
        result = claude_code_record(
            "user",
            f"u{i}",
            f"a{i}",
            [{"type": "tool_result", "tool_use_id": f"t{i}", "content": BIG}],
            toolUseResult={"stdout": BIG, "stderr": ""},
        )
        records += [use, result]
        parent = f"u{i}"
    clears = run_plan(records, "claude-code")
    assert clears == {2: [(0, "[Previous: used Bash]")]}
    record = records[1]
    apply(dialects.CLAUDE_CODE, record, clears[2])
    assert record["message"]["content"][0]["content"] == "[Previous: used Bash]"
    assert "toolUseResult" not in record


def test_claude_code_sidechains_counted_on_their_own():
    def pair(i, side, agent=None, parent=None):
        extra = {"isSidechain": side}
        if agent:
            extra["agentId"] = agent
        use = claude_code_record(
            "assistant", f"a{i}", parent, [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {}}]
        )
        res = claude_code_record(
            "user", f"u{i}", f"a{i}", [{"type": "tool_result", "tool_use_id": f"t{i}", "content": BIG}]
        )
        use.update(extra)
        res.update(extra)
        return [use, res]

    records = pair(0, False) + pair(1, True, parent=None) + pair(2, False) + pair(3, True, parent="u1")
    records += pair(4, False) + pair(5, False)
    # main has 4 results (lines 2, 6, 10, 12): the first is cleared; the sidechain (lines 4, 8) has 2: kept.
    assert cleared_lines(records, "claude-code") == {2}
    # one sub-agent per agentId, even without parent links
    records = [r for i in range(5) for r in pair(10 + i, True, agent="A")]
    assert cleared_lines(records, "claude-code") == {2, 4}


def test_claude_code_sidechain_tree_without_agent_id():
    side = []
    parent = None
    for i in range(4):
        use = claude_code_record(
            "assistant", f"a{i}", parent, [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {}}]
        )
        res = claude_code_record(
            "user", f"u{i}", f"a{i}", [{"type": "tool_result", "tool_use_id": f"t{i}", "content": BIG}]
        )
        use["isSidechain"] = res["isSidechain"] = True
        side += [use, res]
        parent = f"u{i}"
    # a second tree rooted at a sidechain record whose parent is a main record
    other = claude_code_record(
        "assistant", "b0", "main-1", [{"type": "tool_use", "id": "s0", "name": "Bash"}]
    )
    other_res = claude_code_record(
        "user", "c0", "b0", [{"type": "tool_result", "tool_use_id": "s0", "content": BIG}]
    )
    other["isSidechain"] = other_res["isSidechain"] = True
    main = claude_code_record("user", "main-1", None, "hello")
    records = [main, other] + side + [other_res]
    # tree one has 4 results (lines 4, 6, 8, 10): the first is cleared; tree two has one: kept.
    assert cleared_lines(records, "claude-code") == {4}


def to_file(records: list[dict]) -> io.BytesIO:
    return io.BytesIO(b"".join(json.dumps(r).encode() + b"\n" for r in records))


@pytest.mark.parametrize("dialect", [None, "anthropic"])
def test_file_edit_rewrites_only_cleared_lines_and_is_idempotent(dialect):
    records = anthropic_conversation([(f"t{i}", "bash", BIG) for i in range(5)])
    source = to_file(records)
    edit = analyze(source, "mem.jsonl", options=MicroOptions(), fmt=dialect)
    assert edit.stats["cleared"] == 2
    source.seek(0)
    out = io.BytesIO()
    edit.write(source, out)
    old_lines = source.getvalue().splitlines(keepends=True)
    new_lines = out.getvalue().splitlines(keepends=True)
    assert len(old_lines) == len(new_lines)
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    assert changed == [2, 4]
    # re-serialized in the file's own style (json.dumps default separators)
    assert new_lines[2] == (
        b'{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t0", '
        b'"content": "[Previous: used bash]"}]}\n'
    )
    again = analyze(io.BytesIO(out.getvalue()), "mem.jsonl", options=MicroOptions())
    assert not again.changed


def test_long_custom_placeholder_is_idempotent():
    records = anthropic_conversation([(f"t{i}", "bash", BIG) for i in range(5)])
    options = MicroOptions(placeholder="{tool_name}: " + "z" * 200)
    first = analyze(to_file(records), "m", options=options)
    source = to_file(records)
    out = io.BytesIO()
    first.write(source, out)
    second = analyze(io.BytesIO(out.getvalue()), "m", options=options)
    assert first.changed and not second.changed


@pytest.mark.parametrize("keep_ids", [True, False])
@pytest.mark.parametrize("head", ["", "toolu_01"])  # Claude's ids are keyed by their tail
def test_names_match_ids_exactly_whether_results_keep_their_ids(keep_ids, head):
    # A result read before its use, a result of an id no use has, and two uses of one id (the first
    # name counts), with plain and Claude ids: the placeholders name the same tools with or without
    # the ids kept.
    records = [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": head + "early", "content": BIG}]},
        *anthropic_conversation([(head + "early", "grep", BIG), (head + "twice", "bash", BIG)]),
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": head + "twice", "name": "glob", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": head + "twice", "content": BIG}]},
        # The orphan's tail as an id of its own (with head): a use of another id, naming another tool.
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "orphan" if head else "x", "name": "ls"}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": head + "orphan", "content": BIG}],
        },
        *anthropic_conversation([(f"k{i}", "bash", BIG) for i in range(3)]),
    ]
    options = MicroOptions()
    index = MicroIndex(dialects.get("anthropic"), keep_ids=keep_ids)
    for number, record in enumerate(records, 1):
        index.add(number, record)
    named = {line: changes[0][1] for line, changes in plan(index, options).items()}
    assert named == {
        1: options.render("grep"),
        4: options.render("grep"),
        6: options.render("bash"),
        8: options.render("bash"),
        10: options.render("unknown"),
    }
    ids = [fact.tool_use_id for facts in index.results.values() for fact in facts]
    assert ids[:5] == (
        [head + "early", head + "early", head + "twice", head + "twice", head + "orphan"]
        if keep_ids
        else [head + "early", None, None, None, head + "orphan"]
    )


def claude_id(number: int) -> str:
    return f"toolu_01{number:022d}"


def tool_use(tool_id: str, name: str) -> dict:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": {}}]}


def tool_result(tool_id: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": BIG}]}


def bash_calls(count: int) -> list[dict]:
    return anthropic_conversation([(claude_id(n), "bash", BIG) for n in range(count)])[1:]


def test_names_stay_exact_once_old_ids_leave_the_dict_of_names():
    # Past the uses tool_names holds as entries, the older Claude ids move to columns and are looked up
    # at the end of the read (docs/design.md, "Memory per record"): a result read long after its use,
    # one read before a use that then moves and an id no use has are named as with every id at hand,
    # and a second run changes nothing.
    # An id of another form stays where it is.
    far, early, orphan = (claude_id(10**6 + n) for n in range(3))
    other = "call_other"
    records = [
        tool_result(early),
        tool_use(early, "glob"),
        tool_use(far, "grep"),
        tool_use(other, "find"),
        *bash_calls(3 * _LIVE_NAMES),
        tool_result(far),
        tool_result(orphan),
        tool_result(other),
        *bash_calls(3),
    ]
    edit = analyze(to_file(records), "many.jsonl", options=MicroOptions())
    named = {line: changes[0][1] for line, changes in edit.clears.items()}
    options = MicroOptions()
    last = len(records) - 6  # the result of `other`
    assert named[1] == options.render("glob")
    assert named[last - 2] == options.render("grep")
    assert named[last - 1] == options.render("unknown")
    assert named[last] == options.render("find")
    assert {named[line] for line in range(6, last - 2, 2)} == {options.render("bash")}
    assert len(named) == 3 * _LIVE_NAMES + 4
    out = io.BytesIO()
    edit.write(to_file(records), out)
    assert not analyze(io.BytesIO(out.getvalue()), "many.jsonl", options=MicroOptions()).changed


def test_an_id_used_again_with_another_name_long_after_keeps_the_first():
    # The first use's name counts, also where that use's id has left the dict of names.
    twice = claude_id(10**6)
    records = [
        tool_use(twice, "ls"),
        *bash_calls(3 * _LIVE_NAMES),
        tool_use(twice, "cat"),
        tool_result(twice),
    ]
    records += bash_calls(3)
    edit = analyze(to_file(records), "twice.jsonl", options=MicroOptions())
    assert edit.clears[len(records) - 6] == [(0, MicroOptions().render("ls"))]


def test_results_follow_the_conversation_order_and_leave_the_lines_it_has_not() -> None:
    # Lines 5, 3, 9, 3: the order puts line 3 before line 5 and has no place for line 9; line 3's two
    # results keep their order, and every field (a kept text, a tool's name, the flags) moves with its result.
    facts = Facts(
        [
            ResultFact(5, 0, "a", True, 10, None),
            ResultFact(3, 1, "b", True, 20, "[short]", truncated=True),
            ResultFact(9, 0, "c", False, 30, None),
            ResultFact(3, -1, None, True, 2**40, None, tool_name="Bash", copy_left=True),
        ]
    )
    moved = list(facts.reordered({3: 0, 5: 1, 7: 2}))
    assert moved == [
        ResultFact(3, 1, "b", True, 20, "[short]", truncated=True),
        ResultFact(3, -1, None, True, 2**40, None, tool_name="Bash", copy_left=True),
        ResultFact(5, 0, "a", True, 10, None),
    ]
