"""A reference model of micro and summarize, for the property tests to compare the CLI's output with.

Written from docs/design.md, "Layers" and "Dialects", not from compactcli: it imports nothing of the
package, so a tool result the dialect code cannot see, a wrong `--keep` or a cut in the wrong place shows
up as a difference instead of being repeated by the checker.

Records are what `json.loads` gives for each line; `line` below is a 0-based index into them.
"""

from __future__ import annotations

import copy
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

DIALECTS = ("anthropic", "claude-code", "openai")
# The repr the anthropic SDK gives a tool_use block, as agents that str() their blocks save it.
_SDK_TOOL_USE = re.compile(
    r"^ToolUseBlock\(id=(['\"])(?P<id>.*?)\1, .*name=(['\"])(?P<name>[^'\"]*)\3, type='tool_use'\)$"
)


@dataclass(frozen=True)
class Result:
    line: int
    slot: int  # index in the message's content list; -1 for an OpenAI tool message's own content
    tool_use_id: str | None
    content: object
    conversation: str


# Codex rollouts: `response_item` records carry Responses API items; calls and outputs pair by call_id.
CODEX_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
CODEX_OUTPUTS = ("function_call_output", "custom_tool_call_output")
# event_msg records that repeat a command's output for the UI, and the fields holding it.
CODEX_UI_COPIES = {
    "exec_command_end": ("aggregated_output", "formatted_output", "stdout", "stderr"),
    "patch_apply_end": ("stdout", "stderr"),
}


# Copilot CLI events.jsonl: assistant.message toolRequests, answered by tool.execution_complete events
# (result.content is what the model is sent; detailedContent and contents are the UI's copies).
COPILOT_UI_FIELDS = ("detailedContent", "contents")


def _copilot_data(record: dict, kind: str) -> dict | None:
    data = record.get("data")
    return data if record.get("type") == kind and isinstance(data, dict) else None


# A postToolUse hook.start names no call; its input's toolResult copies the result of the next
# tool.execution_complete of a call of its toolName whose text is the copy's textResultForLlm, or else the
# result right after it, of that tool (docs/design.md, "micro and estimate"). micro clears that text and
# empties the UI's fields beside it. A copy Copilot elided itself is none.
COPILOT_HOOK_UI_FIELDS = ("textResultForLlm", "sessionLog", "contents", "binaryResultsForLlm")


def _hook_copy(record: dict) -> tuple[str, dict] | None:
    data = _copilot_data(record, "hook.start")
    given = data.get("input") if data and data.get("hookType") == "postToolUse" else None
    copy_ = given.get("toolResult") if isinstance(given, dict) else None
    text = copy_.get("textResultForLlm") if isinstance(copy_, dict) else None
    if isinstance(text, str) and not text.startswith("[copilot:elided "):
        return str(given.get("toolName")), copy_
    return None


def copilot_hook_matches(records: list[dict]) -> dict[int, tuple[str | None, bool]]:
    """Line of each postToolUse hook.start that copies a result -> (that result's call id, whether it
    holds the result's very text). Each result, in file order, takes the oldest copy waiting of its tool
    with its text, else the copy written right before it (no other result between) if of its tool."""
    names = {id_: name for record in records for id_, name in tool_uses(record, "copilot")}
    results = {result.line: result for result in tool_results(records, "copilot")}
    waiting: list[tuple[int, str, str]] = []  # (line, tool, text), oldest first
    last: int | None = None  # the line of the copy written since the last result
    found: dict[int, tuple[str | None, bool]] = {}
    for line, record in enumerate(records):
        hook = _hook_copy(record)
        if hook is not None:
            waiting.append((line, hook[0], hook[1]["textResultForLlm"]))
            last = line
            continue
        result = results.get(line)
        if result is None:
            continue
        name = names.get(result.tool_use_id or "")
        same = next((w for w in waiting if w[1] == name and w[2] == result.content), None)
        near = next((w for w in waiting if w[0] == last and w[1] == name), None) if same is None else None
        if same is not None or near is not None:
            match = same or near
            waiting.remove(match)
            found[match[0]] = (result.tool_use_id, same is not None)
        last = None
    return found


def copilot_hook_copies(records: list[dict]) -> dict[int, str | None]:
    """Line of each postToolUse hook.start that copies a result -> that result's call id."""
    return {line: call for line, (call, _) in copilot_hook_matches(records).items()}


def without_hook_copy(record: dict) -> dict:
    """A hook.start with the copy's text and the UI's fields beside it left out."""
    out = copy.deepcopy(record)
    for name in COPILOT_HOOK_UI_FIELDS:
        out["data"]["input"]["toolResult"].pop(name, None)
    return out


def _gemini_calls(record: dict) -> Iterator[dict]:
    """Every tool call of a Gemini CLI message record, or of the messages of a checkpoint."""
    patch = record.get("$set")
    messages = patch.get("messages") if isinstance(patch, dict) else None
    for message in messages if isinstance(messages, list) else [record]:
        calls = message.get("toolCalls") if isinstance(message, dict) else None
        yield from (call for call in calls if isinstance(call, dict)) if isinstance(calls, list) else ()


def restore_ui_copies(rebuilt: dict, old: dict, dialect: str) -> None:
    """Put back the UI's copies micro clears with a result: Copilot's, Gemini CLI's resultDisplay (to
    compare the rest)."""
    if dialect == "gemini-cli":
        for new_call, old_call in zip(_gemini_calls(rebuilt), _gemini_calls(old), strict=True):
            if "resultDisplay" in old_call:
                new_call["resultDisplay"] = old_call["resultDisplay"]
        return
    if dialect != "copilot" or _copilot_data(old, "tool.execution_complete") is None:
        return
    old_result, new_result = old["data"].get("result"), rebuilt["data"].get("result")
    if isinstance(old_result, dict) and isinstance(new_result, dict):
        for name in COPILOT_UI_FIELDS:
            if name in old_result:
                new_result[name] = old_result[name]


def _codex_item(record: dict) -> dict | None:
    payload = record.get("payload")
    return payload if record.get("type") == "response_item" and isinstance(payload, dict) else None


def ui_copy_of(record: dict, dialect: str) -> str | None:
    """The call id whose output a Codex UI record repeats, else None."""
    payload = record.get("payload")
    if dialect != "codex" or record.get("type") != "event_msg" or not isinstance(payload, dict):
        return None
    return payload.get("call_id") if payload.get("type") in CODEX_UI_COPIES else None


def without_ui_output(record: dict) -> dict:
    """A Codex UI copy record with its output fields left out."""
    payload = {
        k: v for k, v in record["payload"].items() if k not in CODEX_UI_COPIES[record["payload"]["type"]]
    }
    return {**record, "payload": payload}


# Qwen Code: records carry Gemini Contents (`message.parts`); a functionResponse answers the
# functionCall of its id, its output is `response.output` (docs/design.md, "Gemini Content parts").
QWEN_MESSAGES = ("user", "assistant", "tool_result")


def _qwen_parts(record: dict) -> list:
    message = record.get("message")
    if record.get("type") not in QWEN_MESSAGES or not isinstance(message, dict):
        return []
    parts = message.get("parts")
    return [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []


def _qwen_output(response: dict) -> object:
    body = response.get("response")
    if isinstance(body, dict) and list(body) == ["output"] and isinstance(body["output"], str):
        return body["output"]
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def _message(record: dict, dialect: str) -> dict | None:
    """The API message a record holds: the record itself, or Claude Code's `message` field."""
    if dialect == "qwen-code":
        return None  # Gemini parts: see _qwen_parts
    if dialect in ("codex", "copilot"):
        return None  # calls and outputs are items or events of their own
    if dialect == "claude-code":
        inner = record.get("message")
        return inner if record.get("type") in ("user", "assistant") and isinstance(inner, dict) else None
    if dialect == "pi":  # a `message` entry's AgentMessage
        inner = record.get("message")
        return inner if record.get("type") == "message" and isinstance(inner, dict) else None
    return record if "role" in record else None


def _blocks(message: dict | None) -> list:
    content = message.get("content") if message else None
    return content if isinstance(content, list) else []


def tool_uses(record: dict, dialect: str) -> Iterator[tuple[str, str]]:
    """(id, name) of each tool call in a record."""
    entry = _codex_item(record) if dialect == "codex" else None
    if entry is not None and entry.get("type") in CODEX_CALLS:
        yield entry["call_id"], "local_shell" if entry["type"] == "local_shell_call" else entry["name"]
    if dialect == "gemini-cli":  # a gemini record's calls (each version of it names the same)
        for call in record.get("toolCalls") or () if record.get("type") == "gemini" else ():
            yield call["id"], call["name"]
        return
    if dialect == "qwen-code":
        for part in _qwen_parts(record):
            call = part.get("functionCall")
            if isinstance(call, dict):
                yield call["id"], call["name"]
        return
    asked = _copilot_data(record, "assistant.message") if dialect == "copilot" else None
    for request in (asked or {}).get("toolRequests") or ():
        yield request["toolCallId"], request.get("name") or "unknown"
    message = _message(record, dialect)
    if message is None or message.get("role") != "assistant":
        return
    if dialect == "openai":
        for call in message.get("tool_calls") or ():
            function = call.get("function")
            yield call["id"], function["name"] if isinstance(function, dict) else call["name"]
        return
    for block in _blocks(message):
        if dialect == "pi":
            if isinstance(block, dict) and block.get("type") == "toolCall":
                yield block["id"], block["name"]
            continue
        if isinstance(block, dict) and block.get("type") == "tool_use":
            yield block["id"], block["name"]
        elif isinstance(block, str) and (found := _SDK_TOOL_USE.match(block)):
            yield found["id"], found["name"]


class _Conversations:
    """Claude Code: the main conversation, and each sub-agent's (by agentId, else by sidechain tree)."""

    def __init__(self) -> None:
        self.root: dict[str, str] = {}

    def of(self, record: dict, dialect: str) -> str:
        if dialect == "copilot":  # a sub-agent's events name the call that started it, or the agent
            data = record.get("data") if isinstance(record.get("data"), dict) else {}
            return record.get("agentId") or data.get("parentToolCallId") or "main"
        if dialect != "claude-code" or record.get("isSidechain") is not True:
            return "main"
        root = self.root.get(record.get("parentUuid") or "", record.get("uuid") or "")
        self.root[record.get("uuid") or ""] = root
        return f"agent {record['agentId']}" if record.get("agentId") else f"tree {root}"


def _gemini_responses(record: dict) -> list[tuple[int, dict]]:
    """Gemini CLI: (slot, functionResponse) of every tool call's result in a message record and in the
    messages of a `$set` checkpoint; slot = message number * 1000 + call number."""
    patch = record.get("$set")
    messages = patch.get("messages") if isinstance(patch, dict) else None
    found = []
    for number, message in enumerate(messages if isinstance(messages, list) else [record]):
        if (
            isinstance(message, dict)
            and message.get("type") == "user"
            and isinstance(message.get("content"), list)
        ):
            for index, part in enumerate(message["content"]):  # the responses as a user record of their own
                if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                    found.append((number * 1000 + index, part["functionResponse"]))
            continue
        calls = message.get("toolCalls") if isinstance(message, dict) else None
        for index, call in enumerate(calls if isinstance(calls, list) else []):
            for part in call.get("result") or []:
                if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                    found.append((number * 1000 + index, part["functionResponse"]))
                    break
    return found


def _gemini_output(response: dict) -> object:
    body = response.get("response")
    return body["output"] if isinstance(body, dict) and list(body) == ["output"] else body


def tool_results(records: list[dict], dialect: str) -> list[Result]:
    """Every tool result in file order, with the conversation it belongs to."""
    found: list[Result] = []
    conversations = _Conversations()
    for line, record in enumerate(records):
        if dialect == "gemini-cli":
            for slot, response in _gemini_responses(record):
                found.append(Result(line, slot, response.get("id"), _gemini_output(response), "main"))
            continue
        conversation = conversations.of(record, dialect)
        entry = _codex_item(record) if dialect == "codex" else None
        if entry is not None and entry.get("type") in CODEX_OUTPUTS:
            found.append(Result(line, -1, entry.get("call_id"), entry.get("output"), conversation))
        if dialect == "qwen-code":
            for slot, part in enumerate(_qwen_parts(record)):
                answer = part.get("functionResponse")
                if isinstance(answer, dict):
                    found.append(Result(line, slot, answer.get("id"), _qwen_output(answer), conversation))
            continue
        done = _copilot_data(record, "tool.execution_complete") if dialect == "copilot" else None
        if done is not None:
            result, error = done.get("result"), done.get("error")
            if isinstance(result, dict) and "content" in result:
                content = result["content"]
            else:
                content = error.get("message", "") if isinstance(error, dict) else error or ""
            found.append(Result(line, -1, done.get("toolCallId"), content, conversation))
        message = _message(record, dialect)
        if message is None:
            continue
        if dialect == "pi":
            if message.get("role") == "toolResult":
                content = message.get("content")
                # One text block reads as its text: what micro writes a placeholder as.
                if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "text":
                    content = content[0].get("text")
                found.append(Result(line, -1, message.get("toolCallId"), content, conversation))
            continue
        if dialect == "openai":
            if message.get("role") == "tool":
                found.append(
                    Result(line, -1, message.get("tool_call_id"), message.get("content"), conversation)
                )
            continue
        if message.get("role") != "user":
            continue
        for slot, block in enumerate(_blocks(message)):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found.append(Result(line, slot, block.get("tool_use_id"), block.get("content"), conversation))
    return found


def set_content(record: dict, dialect: str, result: Result, content: object) -> None:
    if dialect == "gemini-cli":
        response = dict(_gemini_responses(record))[result.slot]
        response["response"] = {"output": content} if isinstance(content, str) else content
        patch = record.get("$set")
        message = patch["messages"][result.slot // 1000] if isinstance(patch, dict) else record
        if message.get("type") != "user" and isinstance(content, str):
            call = message["toolCalls"][result.slot % 1000]
            display = call.get("resultDisplay")  # the UI's rendering: text or a shell's styled lines
            if (isinstance(display, str) and display) or isinstance(display, list):
                call["resultDisplay"] = content
        return
    if dialect == "qwen-code":
        answer = _qwen_parts(record)[result.slot]["functionResponse"]
        answer["response"] = {"output": content}
        answer.pop("parts", None)
        copy_ = record.get("toolCallResult")
        if isinstance(copy_, dict) and copy_.get("callId") == answer.get("id") and "resultDisplay" in copy_:
            copy_["resultDisplay"] = content  # the UI's copy of what was cleared
        return
    if dialect == "codex":
        record["payload"]["output"] = content
        return
    if dialect == "copilot":
        data = record["data"]
        if isinstance(data.get("result"), dict):
            data["result"]["content"] = content
            for name in COPILOT_UI_FIELDS:  # the UI's copies of a cleared result go empty with it
                if name in data["result"]:
                    data["result"][name] = "" if isinstance(data["result"][name], str) else []
        elif isinstance(data.get("error"), dict):
            data["error"]["message"] = content
        else:
            data["error"] = content
        return
    message = _message(record, dialect)
    assert message is not None
    if dialect == "pi":  # content is a list of blocks; the UI's copy (details) goes
        message["content"] = [{"type": "text", "text": content}] if isinstance(content, str) else content
        message.pop("details", None)
        return
    if result.slot < 0:
        message["content"] = content
    else:
        message["content"][result.slot]["content"] = content
    if dialect == "claude-code":
        record.pop("toolUseResult", None)  # the UI's copy of what was cleared goes too


# --------------------------------------------------------------------------------------------- micro


@dataclass(frozen=True)
class MicroRules:
    keep: int = 3
    min_chars: int = 100
    # micro's documented default: each agent's file-read tool
    preserve: frozenset[str] = frozenset({"read_file", "Read", "read", "view"})
    placeholder: str = "[Previous: used {tool_name}]"
    clear_multimodal: bool = False

    def args(self) -> list[str]:
        """The same rules as micro's command-line options."""
        args = [
            "--keep",
            str(self.keep),
            "--min-chars",
            str(self.min_chars),
            "--placeholder",
            self.placeholder,
        ]
        args += [f"--preserve={name}" for name in sorted(self.preserve)] or ["--no-preserve"]
        return args + (["--clear-multimodal"] if self.clear_multimodal else [])


def characters(content: object) -> int:
    """A result's size: the string's length; for a list of blocks, its texts and base64 data."""
    if isinstance(content, str):
        return len(content)
    total = 0
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict):
            total += len(block.get("text", "")) + len((block.get("source") or {}).get("data", ""))
        else:
            total += len(str(block))
    return total


def micro(records: list[dict], dialect: str, rules: MicroRules) -> tuple[list[dict], set[int]]:
    """What micro makes of the records, and the lines it changes."""
    names = {id_: name for record in records for id_, name in tool_uses(record, dialect)}
    per_conversation: dict[str, list[Result]] = defaultdict(list)
    for result in tool_results(records, dialect):
        per_conversation[result.conversation].append(result)
    out = copy.deepcopy(records)
    changed: set[int] = set()
    cleared: dict[str | None, str] = {}  # call id -> its placeholder
    # call id -> its placeholder, of results cleared before: what is left beside them goes (docs/design.md,
    # "A result cleared before")
    cleared_before: dict[str | None, str] = {}
    for results in per_conversation.values():
        for result in results[: max(0, len(results) - rules.keep)]:
            name = names.get(result.tool_use_id or "", "unknown")
            if not isinstance(result.content, str) and not rules.clear_multimodal:
                continue
            if name in rules.preserve:
                continue
            placeholder = rules.placeholder.replace("{tool_name}", name)
            if result.content == placeholder:
                cleared_before[result.tool_use_id] = placeholder
                continue
            if characters(result.content) <= rules.min_chars:
                continue
            set_content(out[result.line], dialect, result, placeholder)
            changed.add(result.line)
            cleared[result.tool_use_id] = placeholder
    # Codex: a UI copy of a cleared output is cleared with it; its first output field present gets the
    # placeholder, the others become empty (docs/design.md, "Codex rollouts", micro).
    for line, record in enumerate(records):
        call = ui_copy_of(record, dialect)
        if call not in cleared:
            continue
        payload = out[line]["payload"]
        present = [name for name in CODEX_UI_COPIES[payload["type"]] if isinstance(payload.get(name), str)]
        for position, name in enumerate(present):
            payload[name] = cleared[call] if position == 0 else ""
        if out[line] != record:
            changed.add(line)
    # Copilot: the copy a postToolUse hook was given goes with the result it copies, the same way; one of
    # other text where it holds more than min_chars characters (then also beside a result cleared before).
    for line, (call, same) in (copilot_hook_matches(records) if dialect == "copilot" else {}).items():
        copy_ = out[line]["data"]["input"]["toolResult"]
        if not same and len(copy_["textResultForLlm"]) <= rules.min_chars:
            continue
        placeholder = cleared.get(call) or (None if same else cleared_before.get(call))
        if placeholder is None:
            continue
        for name in COPILOT_HOOK_UI_FIELDS:
            if name == "textResultForLlm":
                copy_[name] = placeholder
            elif name in copy_:
                copy_[name] = "" if isinstance(copy_[name], str) else []
        if out[line] != record:
            changed.add(line)
    return out, changed


# ----------------------------------------------------------------------------------------- summarize

SUMMARY_PREFIX = "[Conversation compressed. Transcript: "
CLAUDE_CODE_SUMMARY_PREFIX = "This session is being continued from a previous conversation"


@dataclass(frozen=True)
class Message:
    line: int
    role: str
    uses: frozenset[str]  # ids of the tool calls it makes
    answers: frozenset[str]  # ids its tool results answer
    summary: bool  # an earlier compaction's summary


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")


def conversation_messages(records: list[dict], dialect: str) -> list[Message]:
    """The messages summarize works on: every message of the file; for Claude Code the main conversation's
    user and assistant records from its last compaction on (a file of sidechain records only: those)."""
    results_by_line: dict[int, set[str]] = defaultdict(set)
    for result in tool_results(records, dialect):
        results_by_line[result.line].add(result.tool_use_id or "")
    main: list[Message] = []
    side: list[Message] = []
    for line, record in enumerate(records):
        in_side = dialect == "claude-code" and record.get("isSidechain") is True
        target = side if in_side else main
        if (
            dialect == "claude-code"
            and record.get("type") == "system"
            and record.get("subtype") == "compact_boundary"
        ):
            target.clear()
            continue
        message = _message(record, dialect)
        if message is None:
            continue
        role = {"tool": "user", "developer": "system"}.get(message.get("role"), message.get("role"))
        compacted = dialect == "claude-code" and record.get("isCompactSummary") is True
        if compacted:
            target.clear()  # the active context starts with it
        text = _text(message.get("content")).lstrip()
        summary = compacted or (
            role == "user" and text.startswith((SUMMARY_PREFIX, CLAUDE_CODE_SUMMARY_PREFIX))
        )
        uses = frozenset(id_ for id_, _ in tool_uses(record, dialect))
        target.append(Message(line, role, uses, frozenset(results_by_line.get(line, ())), summary))
    return side if dialect == "claude-code" and not main else main


def summarize_cut(messages: list[Message], keep_last: int) -> int:
    """Index of the first message kept: the last `keep_last` (none when 0), moved earlier while a kept
    result answers a call before the cut or the cut splits consecutive assistant messages."""
    cut = len(messages) if keep_last <= 0 else max(0, len(messages) - keep_last)
    while True:
        called_before = {id_ for m in messages[:cut] for id_ in m.uses}
        answered_later = {id_ for m in messages[cut:] for id_ in m.answers}
        if called_before & answered_later:
            cut -= 1
            continue
        if 0 < cut < len(messages) and messages[cut].role == messages[cut - 1].role == "assistant":
            cut -= 1
            continue
        return cut


def summarize_plan(records: list[dict], dialect: str, keep_last: int) -> tuple[int, list[int]] | None:
    """None when summarize leaves the file alone; else (the first line kept, the lines above it kept on top:
    system messages, and Claude Code's summary records)."""
    messages = conversation_messages(records, dialect)
    cut = summarize_cut(messages, keep_last)
    summarized = [m for m in messages[:cut] if m.role != "system"]
    if not summarized or (len(summarized) == 1 and summarized[0].summary):
        return None
    first_kept = messages[cut].line if cut < len(messages) else len(records)
    if dialect == "claude-code":
        top = [n for n in range(first_kept) if records[n].get("type") == "summary"]
    else:
        top = [
            n
            for n in range(first_kept)
            if (_message(records[n], dialect) or {}).get("role") in ("system", "developer")
        ]
    return first_kept, top
