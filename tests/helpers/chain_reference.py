"""A plain model of the Claude Code conversation order (docs/design.md, "Dialects"), for property tests.

It imports nothing of compactcli and keeps everything by uuid, as the design states the rule: the active
branch is the tree around the path from the last leaf to its root, less sibling subtrees that start with a
typed prompt or another response's record; records come in file order where their parents allow it, and
the records written between the parts of one response come right after the whole response. Where a
damaged log links records in a cycle, each record is taken once.
"""

from __future__ import annotations

import heapq


def _only_results(content: object) -> bool:
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _conversation(record: dict, roots: dict[str, str]) -> str:
    if record.get("isSidechain") is not True:
        return "main"
    uuid, parent = record.get("uuid"), record.get("parentUuid")
    root = roots.get(parent) if isinstance(parent, str) else None
    root = root or (uuid if isinstance(uuid, str) else f"no-uuid:{id(record)}")
    if isinstance(uuid, str):
        roots[uuid] = root
    agent = record.get("agentId")
    return f"agent:{agent}" if isinstance(agent, str) and agent else f"sidechain:{root}"


def chain_order(records: list[dict]) -> list[int]:
    """1-based line numbers of the records of every conversation, each in the order the model saw them."""
    chains: dict[str, list[tuple[str, int, dict]]] = {}
    roots: dict[str, str] = {}
    seen: dict[str, set[str]] = {}
    for number, record in enumerate(records, 1):
        key = _conversation(record, roots)
        members = chains.setdefault(key, [])  # conversations in the order their first record comes
        uuid = record.get("uuid")
        if not isinstance(uuid, str) or uuid in seen.setdefault(key, set()):
            if record.get("type") not in ("user", "assistant"):
                continue
            uuid = f"line:{number}"
        seen[key].add(uuid)
        members.append((uuid, number, record))
    out: list[int] = []
    for members in chains.values():
        out.extend(_one_chain(members) if members else [])
    return out


def _one_chain(members: list[tuple[str, int, dict]]) -> list[int]:
    line = {uuid: number for uuid, number, _ in members}
    parent: dict[str, str | None] = {}
    response: dict[str, object] = {}
    prompts: set[str] = set()
    before = None
    for uuid, _, record in members:
        named = record.get("parentUuid") or record.get("logicalParentUuid")
        if not isinstance(named, str):
            compaction = (record.get("type") == "system" and record.get("subtype") == "compact_boundary") or (
                record.get("isCompactSummary") is True
            )
            named = before if compaction or "parentUuid" not in record else None
        if named is not None and named not in line:
            named = before  # a torn parent: the record before
        parent[uuid] = named
        message = record.get("message")
        if (
            record.get("type") == "assistant"
            and isinstance(message, dict)
            and isinstance(message.get("id"), str)
        ):
            response[uuid] = message["id"]
        elif record.get("type") == "user" and not record.get("isMeta"):
            content = message.get("content") if isinstance(message, dict) else None
            if not _only_results(content):
                prompts.add(uuid)
        before = uuid
    children: dict[str | None, list[str]] = {}
    for uuid, up in parent.items():
        children.setdefault(up, []).append(uuid)
    leaves = [uuid for uuid in line if uuid not in children]
    if not leaves:
        return []
    at: str | None = max(leaves, key=line.__getitem__)
    on_path: set[str] = set()
    while at is not None and at not in on_path:  # a damaged log may link records in a cycle
        on_path.add(at)
        root, at = at, parent[at]
    path_responses = {response[uuid] for uuid in on_path if uuid in response}

    def forks(uuid: str) -> bool:
        other = uuid in response and response[uuid] not in path_responses
        return uuid in prompts or other

    keep = set()
    todo = [root]
    while todo:
        uuid = todo.pop()
        keep.add(uuid)
        todo.extend(c for c in children.get(uuid, ()) if c not in keep and (c in on_path or not forks(c)))
    ready = [(line[root], root)]
    taken = {root}
    ordered = []
    while ready:
        _, uuid = heapq.heappop(ready)
        ordered.append(uuid)
        for child in children.get(uuid, ()):
            if child in keep and child not in taken:
                taken.add(child)
                heapq.heappush(ready, (line[child], child))
    # The records between a response's first and last part come after the whole response.
    last = {response[uuid]: index for index, uuid in enumerate(ordered) if uuid in response}
    result: list[str] = []
    index = 0
    while index < len(ordered):
        own = response.get(ordered[index])
        end = last[own] if own is not None else index
        span = ordered[index : end + 1]
        result.extend(u for u in span if response.get(u) == own)
        result.extend(u for u in span if response.get(u) != own)
        index = end + 1
    return [line[uuid] for uuid in result]
