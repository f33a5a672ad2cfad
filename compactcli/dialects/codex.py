"""OpenAI Codex CLI rollouts: `{"timestamp", "type", "payload"}` records (docs/design.md, "Codex rollouts").

What the model sees are the `response_item` payloads (Responses API input items: messages, reasoning,
function and custom tool calls and their outputs, paired by `call_id`). A `compacted` record replaces
everything before it with its `replacement_history`. `event_msg` records are the UI's copies (user and
agent messages, command output, token counts); `session_meta` and `turn_context` describe the session.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime

from compactcli.dialects.base import (
    BLOCKS,
    BOUNDARY,
    NO,
    PROVES,
    WHOLE,
    Dialect,
    FileAccess,
    Image,
    ModelView,
    ToolResult,
    ToolUse,
    data_url_image,
    named_file_access,
    recent_within,
)
from compactcli.dialects.openai import call_arguments

RECORD_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
# event_msg records that repeat a tool's output for the UI, and the fields that hold it. The diff in
# patch_apply_end `changes` is the patch the model wrote (the call's input), not output: it stays.
UI_COPIES = {
    "exec_command_end": ("aggregated_output", "formatted_output", "stdout", "stderr"),
    "patch_apply_end": ("stdout", "stderr"),
}
# Codex 0.171 copies a command's output into an `item_completed` event instead, inside its item (a
# CommandExecution whose `id` is the call id).
ITEM_COPIES = {"CommandExecution": ("aggregated_output",)}
LOCAL_SHELL = "local_shell"
# Items that carry a remote compaction's encrypted summary: `compaction` (alias `compaction_summary`), and
# `context_compaction`, which Codex 0.171 writes in its place (codex-rs/protocol models.rs, ResponseItem).
REMOTE_SUMMARIES = frozenset({"compaction", "compaction_summary", "context_compaction"})


def is_record(record: dict) -> bool:
    """A rollout line: a known record type with a payload object."""
    return record.get("type") in RECORD_TYPES and isinstance(record.get("payload"), dict)


def item(record: dict) -> dict | None:
    """The Responses API item a `response_item` record carries, else None."""
    if record.get("type") != "response_item":
        return None
    payload = record.get("payload")
    return payload if isinstance(payload, dict) else None


def event(record: dict) -> dict | None:
    """The payload of an `event_msg` record, else None."""
    if record.get("type") != "event_msg":
        return None
    payload = record.get("payload")
    return payload if isinstance(payload, dict) else None


def ui_copy(record: dict) -> tuple[dict, tuple[str, ...], object] | None:
    """(the object holding a UI copy of a tool's output, the fields that hold it, the call id), else
    None."""
    payload = event(record)
    kind = payload.get("type") if payload is not None else None
    if kind in UI_COPIES:
        return payload, UI_COPIES[kind], payload.get("call_id")
    entry = payload.get("item") if kind == "item_completed" else None
    if isinstance(entry, dict) and entry.get("type") in ITEM_COPIES:
        return entry, ITEM_COPIES[entry["type"]], entry.get("id")
    return None


def event_type(record: dict) -> str | None:
    payload = event(record)
    return payload.get("type") if payload is not None else None


def replacement_history(record: dict) -> list[dict] | None:
    """The items a `compacted` record puts in place of everything before it, else None.

    An old-style record without `replacement_history` (only the summary `message`) still restarts the
    context: Codex rebuilt it from the user messages and the summary; here it starts with the summary.
    """
    if record.get("type") != "compacted":
        return None
    payload = record.get("payload")
    if not isinstance(payload, dict):
        return None
    history = payload.get("replacement_history")
    if isinstance(history, list):
        return [entry for entry in history if isinstance(entry, dict)]
    message = payload.get("message")
    if isinstance(message, str) and message:
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": message}]}]
    return []


def as_record(entry: dict) -> dict:
    """An item of a replacement_history as the `response_item` record that would carry it."""
    return {"type": "response_item", "payload": entry}


def base_instructions(record: dict) -> str | None:
    """The system prompt a `session_meta` record keeps (sent as `instructions` with every call)."""
    if record.get("type") != "session_meta":
        return None
    payload = record.get("payload")
    value = payload.get("base_instructions") if isinstance(payload, dict) else None
    if isinstance(value, dict):
        value = value.get("text")
    return value if isinstance(value, str) and value else None


def last_call_usage(record: dict) -> tuple[int, int, object] | None:
    """(context, output tokens, call key) of a `token_count` event, else None.

    `last_token_usage.total_tokens` is the context after the call: its input plus what it wrote, which the
    next call sends again. The key tells calls apart (the running `total_token_usage`: Codex sometimes
    writes one call's count twice); it is None right after a compaction, where Codex records the new
    history's size with `input_tokens` 0: a size, not a model call.
    """
    payload = event(record)
    if payload is None or payload.get("type") != "token_count":
        return None
    info = payload.get("info")
    usage = info.get("last_token_usage") if isinstance(info, dict) else None
    if not isinstance(usage, dict):
        return None
    total, given = usage.get("total_tokens"), usage.get("input_tokens")
    if not isinstance(total, int) or total <= 0:
        return None
    if not (isinstance(given, int) and given > 0):
        return total, 0, None
    output = usage.get("output_tokens")
    key = json.dumps(info.get("total_token_usage"), sort_keys=True)
    return total, output if isinstance(output, int) else 0, key


# Texts Codex puts in user messages that the user did not type: the session's context, re-sent after a
# compaction as part of the initial context.
CONTEXT_TAGS = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<permissions")


def item_text(entry: dict) -> str:
    """The text of a message item (its input_text / output_text parts, joined by newlines)."""
    content = entry.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def is_context(entry: dict) -> bool:
    """A developer message, or a user message that carries Codex's context rather than the user's words."""
    if entry.get("type") != "message":
        return False
    if entry.get("role") in ("developer", "system"):
        return True
    return entry.get("role") == "user" and item_text(entry).lstrip().startswith(CONTEXT_TAGS)


RESPONSE = "response"  # Dialect.call_id of every item the model writes: consecutive ones are one call


def is_model_item(entry: dict) -> bool:
    """An item the model wrote: reasoning, an assistant message or a call."""
    kind = entry.get("type")
    return kind in CALLS or kind == "reasoning" or (kind == "message" and entry.get("role") == "assistant")


def call_name(entry: dict) -> str:
    if entry.get("type") == "local_shell_call":
        return LOCAL_SHELL
    return str(entry.get("name") or "unknown")


def _arguments(entry: dict) -> object:
    kind = entry.get("type")
    if kind == "custom_tool_call":
        return {"input": entry.get("input", "")}
    if kind == "local_shell_call":
        return entry.get("action") or {}
    return call_arguments(entry)  # a JSON string, as in chat completions


def _image_block(url: object) -> dict:
    url = url if isinstance(url, str) else ""
    if url.startswith("data:") and ";base64," in url:
        media, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _blocks(content: object) -> object:
    """Codex content items (input_text, output_text, input_image) as Anthropic blocks."""
    if isinstance(content, str) or content is None:
        return content or ""
    if not isinstance(content, list):
        return str(content)
    blocks: list = []
    for part in content:
        if not isinstance(part, dict):
            blocks.append({"type": "text", "text": str(part)})
        elif part.get("type") == "input_image":
            blocks.append(_image_block(part.get("image_url")))
        elif isinstance(part.get("text"), str):
            blocks.append({"type": "text", "text": part["text"]})
        else:
            blocks.append(part)
    return blocks


def output_content(entry: dict) -> object:
    """A call output's content: its string, or its content items as Anthropic blocks."""
    output = entry.get("output")
    if isinstance(output, dict) and "content" in output:  # older rollouts: {"content", "success"}
        output = output["content"]
    if isinstance(output, list):
        return _blocks(output)
    return output if output is not None else ""


def normalize_item(entry: dict) -> dict | None:
    """A Responses API item as an Anthropic-shaped message, or None for items that carry nothing."""
    kind = entry.get("type")
    if kind == "message":
        content = _blocks(entry.get("content"))
        if is_context(entry):  # instructions and environment, not the user's words
            return {"role": "system", "content": content}
        return {"role": entry.get("role"), "content": content}
    if kind in CALLS:
        use = {"type": "tool_use", "id": entry.get("call_id"), "name": call_name(entry)}
        use["input"] = _arguments(entry)
        return {"role": "assistant", "content": [use]}
    if kind in OUTPUTS:
        result = {"type": "tool_result", "tool_use_id": entry.get("call_id")}
        result["content"] = output_content(entry)
        return {"role": "user", "content": [result]}
    if kind == "reasoning":
        # The reasoning itself is encrypted; only its summary is readable.
        summary = entry.get("summary")
        texts = (
            [s.get("text", "") for s in summary if isinstance(s, dict)] if isinstance(summary, list) else []
        )
        return {"role": "assistant", "content": [{"type": "thinking", "thinking": "\n".join(texts)}]}
    if kind in REMOTE_SUMMARIES:
        # A remote compaction's summary, encrypted: priced as opaque text of its length.
        return {
            "role": "user",
            "content": [{"type": "text", "text": str(entry.get("encrypted_content") or "")}],
        }
    return None


# --- what the model is sent of a tool output (docs/design.md, "What the model sees of a tool output") ----
#
# The rollout keeps a tool's whole output; Codex cuts it when it records the item into the history it sends
# (codex-rs core/src/context_manager/history.rs, ContextManager::process_item): the turn's
# `truncation_policy` times 1.2 (room for serialization, `Mul<f64>`: rounded up), the middle of the text
# replaced by a marker (codex-rs utils/string/src/truncate.rs, `truncate_middle_with_token_budget` and
# `truncate_middle_chars`; utils/output-truncation, `truncate_function_output_items_with_policy` for an
# output of content items).

SERIALIZATION_ALLOWANCE = 1.2
BYTES_PER_TOKEN = 4  # Codex's own estimate: a token budget is this many bytes

Policy = tuple[bool, int]  # (a token budget, else bytes; the budget with the allowance)


def truncation_policy(record: dict) -> Policy | None:
    """The budget a `turn_context` record sets for its turn's tool outputs (None: the record sets none,
    as rollouts before the field do: their outputs are counted whole)."""
    policy = record["payload"].get("truncation_policy")
    if not isinstance(policy, dict):
        return None
    mode, limit = policy.get("mode"), policy.get("limit")
    if mode not in ("tokens", "bytes") or limit.__class__ is not int or limit < 0:
        return None
    return mode == "tokens", math.ceil(limit * SERIALIZATION_ALLOWANCE)


def _marker(tokens: bool, removed: int) -> str:
    return f"…{removed} tokens truncated…" if tokens else f"…{removed} chars truncated…"


def truncated_text(text: str, policy: Policy) -> str:
    """The text as Codex sends it: whole when it fits the budget, else its first half-budget and last
    half-budget of bytes (on character boundaries) around a marker of what was cut."""
    tokens, limit = policy
    budget = limit * BYTES_PER_TOKEN if tokens else limit
    if not text or len(text) * 4 <= budget:  # at most 4 bytes a character: fits without encoding
        return text
    raw = text.encode("utf-8", "surrogatepass")
    size = len(raw)
    if size <= budget:
        return text
    if budget == 0:
        return _marker(tokens, -(-size // BYTES_PER_TOKEN) if tokens else len(text))
    head = budget // 2
    while head > 0 and raw[head] & 0xC0 == 0x80:  # a character cut in two stays out
        head -= 1
    tail = size - (budget - budget // 2)
    while tail < size and raw[tail] & 0xC0 == 0x80:
        tail += 1
    tail = max(tail, head)
    if tokens:  # Codex counts what it cut as the bytes over the budget, 4 a token
        removed = -(-(size - budget) // BYTES_PER_TOKEN)
    else:
        removed = len(raw[head:tail].decode("utf-8", "ignore"))
    kept = raw[:head].decode("utf-8", "ignore"), raw[tail:].decode("utf-8", "ignore")
    return kept[0] + _marker(tokens, removed) + kept[1]


def truncated_items(items: list, policy: Policy) -> list:
    """An output of content items as Codex sends it: text items while the budget lasts (tokens: bytes / 4
    rounded up), the one that crosses it cut to what is left, later ones left out and counted in a
    closing note; images stay."""
    tokens, remaining = policy
    out: list = []
    omitted = 0
    for part in items:
        text = part.get("text") if isinstance(part, dict) and part.get("type") == "input_text" else None
        if not isinstance(text, str):
            out.append(part)
            continue
        if remaining == 0:
            omitted += 1
            continue
        size = len(text.encode("utf-8", "surrogatepass"))
        cost = -(-size // BYTES_PER_TOKEN) if tokens else size
        if cost <= remaining:
            out.append(part)
            remaining -= cost
            continue
        snippet = truncated_text(text, (tokens, remaining))
        if snippet:
            out.append({**part, "text": snippet})
        else:
            omitted += 1
        remaining = 0
    if omitted:
        out.append({"type": "input_text", "text": f"[omitted {omitted} text items ...]"})
    return out


def seen_output(entry: dict, policy: Policy) -> dict:
    """A call output item as the model is sent it under `policy` (the same item when nothing is cut)."""
    output = entry.get("output")
    holder = output if isinstance(output, dict) and "content" in output else None  # older rollouts
    body = holder["content"] if holder is not None else output
    if isinstance(body, str):
        seen: object = truncated_text(body, policy)
    elif isinstance(body, list):
        seen = truncated_items(body, policy)
    else:
        return entry
    if seen is body or seen == body:
        return entry
    return {**entry, "output": {**holder, "content": seen} if holder is not None else seen}


class TruncatedOutputs:
    """The model's view of a rollout (Dialect.new_view): each tool output cut by the truncation policy of
    the latest `turn_context` before it."""

    __slots__ = ("policy", "_policies")

    def __init__(self, remember: bool = False) -> None:
        self.policy: Policy | None = None
        # remember: the policy each output was recorded under, by call id (replay counts it later)
        self._policies: dict[str, Policy | None] | None = {} if remember else None

    def add(self, record: dict) -> None:
        kind = record.get("type")
        if kind == "turn_context" and isinstance(record.get("payload"), dict):
            self.policy = truncation_policy(record)
        elif self._policies is not None and kind == "response_item":
            entry = item(record)
            call_id = entry.get("call_id") if entry is not None and entry.get("type") in OUTPUTS else None
            if isinstance(call_id, str):
                self._policies.setdefault(call_id, self.policy)

    def normalize(self, record: dict) -> dict | None:
        entry = item(record)
        if entry is None:
            return None
        if entry.get("type") in OUTPUTS:
            policy = self.policy
            call_id = entry.get("call_id")
            if self._policies is not None and isinstance(call_id, str):
                policy = self._policies.get(call_id, policy)
            if policy is not None:
                entry = seen_output(entry, policy)
        return normalize_item(entry)


class CodexDialect(Dialect):
    name = "codex"
    keeps_user_messages = True  # in the compacted record's replacement_history (compaction_records)
    title = "a Codex CLI rollout"
    api = "responses"
    one_message_per_line = False  # session_meta, turn_context and event_msg records pass through

    def fit(self, record: dict) -> int:
        return PROVES if is_record(record) else NO

    def message(self, record: dict) -> dict | None:
        return item(record)

    def normalize(self, record: dict) -> dict | None:
        entry = item(record)
        return normalize_item(entry) if entry is not None else None

    def new_view(self, *, remember: bool = False) -> ModelView:
        return TruncatedOutputs(remember)

    def tool_uses(self, record: dict) -> Iterator[ToolUse]:
        entry = item(record)
        if entry is not None and entry.get("type") in CALLS and isinstance(entry.get("call_id"), str):
            yield ToolUse(entry["call_id"], call_name(entry))

    def tool_results(self, record: dict) -> list[ToolResult]:
        entry = item(record)
        if entry is None or entry.get("type") not in OUTPUTS:
            return []
        return [ToolResult(entry.get("call_id"), -1, entry.get("output"))]  # as in the file

    has_result_copies = True

    def result_copies(self, record: dict) -> list[str]:
        copy = ui_copy(record)
        return [copy[2]] if copy is not None and isinstance(copy[2], str) else []

    def compaction(self, record: dict) -> str | None:
        return BOUNDARY if record.get("type") == "compacted" else None

    def restarted_with(self, record: dict) -> list[dict]:
        history = replacement_history(record)
        return [as_record(entry) for entry in history] if history is not None else []

    def aborts_turn(self, record: dict) -> bool:
        return event_type(record) == "turn_aborted"

    def call_id(self, record: dict) -> object:
        # The items of one response (reasoning, message, calls) come one after another: one call.
        entry = item(record)
        return RESPONSE if entry is not None and is_model_item(entry) else None

    def stays_on_top(self, record: dict) -> bool:
        return record.get("type") == "session_meta"  # Codex reads the session from the first line

    def feeds_summary(self, record: dict) -> bool:
        entry = item(record)
        is_message = entry is not None and entry.get("type") == "message" and entry.get("role") != "assistant"
        return is_message or record.get("type") == "compacted"

    def summary_records(
        self,
        text: str,
        *,
        context_records: list[dict],
        pre_tokens: int | None = None,
        now: datetime | None = None,
        new_uuid: Callable[[], str] | None = None,
    ) -> list[dict]:
        context, user_texts = kept_context(context_records)
        records = compaction_records(text, context, user_texts, now or datetime.now(UTC))
        if any(isinstance(record.get("ordinal"), int) for record in context_records):
            records = numbered_after_session_meta(records)
        return records

    def recorded_call(self, record: dict) -> tuple[int, int, object] | None:
        return last_call_usage(record)

    def instructions(self, record: dict) -> str | None:
        return base_instructions(record)

    def set_result_content(self, record: dict, slot: int, content: object) -> None:
        copy = ui_copy(record)
        if copy is None:
            record["payload"]["output"] = content
            return
        # The UI's copy: the first output field holds the placeholder, the others are emptied.
        holder, fields, _ = copy
        present = [name for name in fields if isinstance(holder.get(name), str)]
        for index, name in enumerate(present):
            holder[name] = content if index == 0 else ""

    # -- micro's strategies (docs/design.md, "Micro strategies") --

    def file_accesses(self, record: dict) -> list[FileAccess]:
        entry = item(record)
        if entry is None or entry.get("type") not in CALLS or not isinstance(entry.get("call_id"), str):
            return []
        return call_file_accesses(entry)

    def failed_calls(self, record: dict) -> list[str]:
        entry = item(record)
        if entry is None or entry.get("type") not in OUTPUTS or not isinstance(entry.get("call_id"), str):
            return []
        return [entry["call_id"]] if failed_output(entry.get("output")) else []

    def working_folder(self, record: dict) -> str | None:
        """session_meta and each turn_context name the folder the turn runs in."""
        if record.get("type") not in ("session_meta", "turn_context"):
            return None
        folder = record["payload"].get("cwd")
        return folder if isinstance(folder, str) and folder else None

    def images(self, record: dict) -> list[Image]:
        return [data_url_image(part.get("image_url")) for part in _image_parts(record)]

    def replace_images(self, record: dict, which: frozenset[int]) -> None:
        for number, part in enumerate(_image_parts(record)):
            if number in which:
                text = data_url_image(part.get("image_url")).placeholder()
                part.clear()  # the same dict, in place: its list is not walked again here
                part.update({"type": "input_text", "text": text})

    def thinking(self, record: dict) -> str | None:
        """A reasoning item is a line of its own: dropped whole. Another item of the model's that
        carries its id (Codex stores the API's item ids) is bound to the reasoning of its response:
        sent with its id but without that reasoning, the API refuses it ("provided without its
        required 'reasoning' item"), so the id goes with the reasoning (drop_thinking). Without an id
        an item is new input, which the API takes: older Codex versions stored no ids at all."""
        entry = item(record)
        if entry is None:
            return None
        if entry.get("type") == "reasoning":
            return WHOLE
        return BLOCKS if "id" in entry and is_model_item(entry) else None

    def drop_thinking(self, record: dict) -> None:
        entry = item(record)
        if entry is not None:
            entry.pop("id", None)

    drops_thinking_says = "drop the item's API id: its response's reasoning is dropped (--drop-thinking)"


def _image_parts(record: dict) -> list[dict]:
    """input_image parts of a message or of a call output's content items."""
    entry = item(record)
    if entry is None:
        return []
    if entry.get("type") == "message":
        parts = entry.get("content")
    elif entry.get("type") in OUTPUTS:
        parts = entry.get("output")
        if isinstance(parts, dict):
            parts = parts.get("content")
    else:
        return []
    if not isinstance(parts, list):
        return []
    return [part for part in parts if isinstance(part, dict) and part.get("type") == "input_image"]


# A shell command that only prints one file: `cat FILE`, or `sed -n 'A,Bp' FILE` (a part of it).
_SHELL_SPECIAL = re.compile(r"[|;&<>$`\n(){}*?!~\\]")
_SED_RANGE = re.compile(r"^\d+(,\d+)?p$")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.MULTILINE)
PATCH_TOOLS = ("apply_patch",)


def _command_text(entry: dict) -> tuple[str | None, str]:
    """(the shell command, the folder it ran in) of a call, when it runs one."""
    arguments = _arguments(entry)
    if not isinstance(arguments, dict):
        return None, ""
    folder = arguments.get("workdir") or arguments.get("working_directory") or ""
    command = arguments.get("cmd", arguments.get("command"))
    if isinstance(command, list) and all(isinstance(word, str) for word in command):
        if len(command) == 3 and command[1] in ("-lc", "-c"):
            command = command[2]
        else:
            import shlex  # here, not above: detection loads this module for every file of any dialect

            command = shlex.join(command)
    return (command if isinstance(command, str) else None), folder if isinstance(folder, str) else ""


def _in_folder(path: str, folder: str) -> str:
    return posixpath.normpath(posixpath.join(folder, path)) if folder else posixpath.normpath(path)


def read_command(command: str) -> tuple[str, str] | None:
    """(file, part) a shell command only prints, or None. Anything beyond one plain `cat FILE` or
    `sed -n 'A,Bp' FILE` (pipes, globs, variables, several files) is no read."""
    if _SHELL_SPECIAL.search(command):
        return None
    import shlex  # (see above); its cost is small beside that of split itself

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) == 2 and words[0] == "cat" and not words[1].startswith("-"):
        return words[1], ""
    if len(words) == 4 and words[:2] == ["sed", "-n"] and _SED_RANGE.match(words[2]):
        if not words[3].startswith("-"):
            return words[3], words[2]
    return None


# How Codex says a call failed: the exit code in the header of an exec's output (unified exec, then the
# older format), the `metadata` of a JSON output, or apply_patch's own refusal of a patch that does not fit.
_EXIT_HEADER = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)$", re.MULTILINE)
_PATCH_REFUSED = ("apply_patch verification failed",)


def failed_output(output: object) -> bool:
    """Whether a call output says the call failed (a nonzero exit code, a patch refused)."""
    if not isinstance(output, str):
        return False
    if output.startswith(_PATCH_REFUSED):
        return True
    if output.startswith('{"output"'):
        try:
            metadata = json.loads(output).get("metadata")
        except (ValueError, AttributeError):
            metadata = None
        code = metadata.get("exit_code") if isinstance(metadata, dict) else None
        return isinstance(code, int) and code != 0
    # Only the header, before the command's own output (which may print anything).
    end = output.find("\nOutput:")
    header = output[:end] if end >= 0 else output.partition("\n")[0]
    match = _EXIT_HEADER.search(header)
    return match is not None and match.group(1) != "0"


def call_file_accesses(entry: dict) -> list[FileAccess]:
    """Reads by `cat`/`sed -n` and writes by apply_patch (each file the patch names) of one call."""
    call_id, name = entry["call_id"], call_name(entry)
    custom = entry.get("type") == "custom_tool_call"
    if name in PATCH_TOOLS or (custom and "*** Begin Patch" in str(entry.get("input"))):
        patch = entry.get("input") if custom else _arguments(entry)
        if isinstance(patch, dict):
            patch = patch.get("input") or patch.get("patch")
        if not isinstance(patch, str):
            return []
        paths = [match.group(1) or match.group(2) for match in _PATCH_FILE.finditer(patch)]
        return [FileAccess(call_id, name, _in_folder(path.strip(), ""), True) for path in paths]
    command, folder = _command_text(entry)
    if command is None:
        access = named_file_access(call_id, name, _arguments(entry))  # read_file and the like
        return [access] if access is not None else []
    if command.lstrip().startswith("apply_patch") and "*** Begin Patch" in command:
        paths = [match.group(1) or match.group(2) for match in _PATCH_FILE.finditer(command)]
        return [FileAccess(call_id, name, _in_folder(path.strip(), folder), True) for path in paths]
    read = read_command(command)
    if read is None:
        return []
    return [FileAccess(call_id, name, _in_folder(read[0], folder), False, read[1])]


# --- a compaction, written the way Codex writes a local one (docs/design.md, "Codex rollouts") ----------


def message_item(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def kept_context(records: Iterable[dict]) -> tuple[list[dict], list[str]]:
    """What a compaction keeps from the records it replaces, in order: the distinct context messages
    (developer instructions, environment) and the texts of the user's own messages. Earlier summaries
    (the `message` of the compacted record whose history holds them) and encrypted remote summaries are
    left out: the new summary covers them."""
    context: list[dict] = []
    seen: set[str] = set()
    texts: list[str] = []
    for record in records:
        history = replacement_history(record)
        summary = record["payload"].get("message") if history is not None else None
        single = item(record)
        for entry in history if history is not None else ([single] if single is not None else []):
            if is_context(entry):
                key = json.dumps(entry, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    context.append(entry)
            elif entry.get("type") == "message" and entry.get("role") == "user":
                text = item_text(entry)
                if text.strip() and text != summary:
                    texts.append(text)
    return context, texts


def compaction_records(summary: str, context: list[dict], user_texts: list[str], now: datetime) -> list[dict]:
    """A `compacted` record whose replacement_history is the context, the user's recent messages and the
    summary (a user message), then the `context_compacted` event, as Codex writes them at /compact."""
    history = [*context, *(message_item("user", text) for text in recent_within(user_texts))]
    history.append(message_item("user", summary))
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return [
        {
            "timestamp": stamp,
            "type": "compacted",
            "payload": {"message": summary, "replacement_history": history},
        },
        {"timestamp": stamp, "type": "event_msg", "payload": {"type": "context_compacted"}},
    ]


def numbered_after_session_meta(records: list[dict]) -> list[dict]:
    """The records with the `ordinal` newer Codex versions (0.171) give every line: its place in the
    file, session_meta 0. Codex refuses to resume a rollout whose last line has none, and the
    compaction's records come right after session_meta (which stays first): 1, 2, ..."""
    return [
        {"timestamp": record["timestamp"], "ordinal": number, **record}
        for number, record in enumerate(records, 1)
    ]


CODEX = CodexDialect()
