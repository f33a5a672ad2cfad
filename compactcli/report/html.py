"""`estimate --format html`: one self-contained page of a run's figures (docs/design.md, "estimate --format
html").

Every figure is one estimate already computed per file (its `stats`: tokens, the heuristic's split, the
tool results micro would clear, `savings`) or the archives' manifest lines; this module only adds them up,
ranks them and lays them out. Styles are inline, there is no script and nothing is fetched: the page opens
offline, from a mail attachment or a CI artifact. Every string that came from a transcript or a path is
escaped (`_e`).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable

from compactcli.core.constants import NO_USAGE, OVER
from compactcli.counting.tokens import CATEGORIES
from compactcli.report import FAILED, Outcome

# How many of the heaviest tool results the page lists one by one (the by-tool table holds them all).
HEAVIEST_LISTED = 25
CATEGORY_TITLES = {
    "text": "text",
    "tool_inputs": "tool inputs",
    "tool_results": "tool results",
    "thinking": "thinking",
    "images": "images",
}
_COLOURS = {
    "text": "#4e79a7",
    "tool_inputs": "#f28e2b",
    "tool_results": "#e15759",
    "thinking": "#76b7b2",
    "images": "#59a14f",
}

History = Callable[[str], list[dict]]  # a transcript's manifest lines, oldest first (restore --list's)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _percent(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


# --- the figures ----------------------------------------------------------------------------------


def counted(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """The files estimate could read, largest first (no count: last), then by path."""
    kept = [o for o in outcomes if o.status != FAILED]
    return sorted(kept, key=lambda o: (-(o.stats.get("tokens") or -1), o.path))


def heuristic_tokens(stats: dict) -> int:
    """The heuristic count of a file's active context: its split added up (what savings are set against)."""
    return sum((stats.get("by_category") or {}).values())


def by_tool(outcomes: Iterable[Outcome]) -> list[dict]:
    """The results micro would clear, per tool (`tool`, `results`, `tokens`, `largest`), heaviest first."""
    tools: dict[str, dict] = {}
    for outcome in outcomes:
        for item in outcome.stats.get("top", ()):
            entry = tools.setdefault(
                item["tool"], {"tool": item["tool"], "results": 0, "tokens": 0, "largest": 0}
            )
            entry["results"] += 1
            entry["tokens"] += item["tokens"]
            entry["largest"] = max(entry["largest"], item["tokens"])
    return sorted(tools.values(), key=lambda entry: (-entry["tokens"], entry["tool"]))


def heaviest(outcomes: Iterable[Outcome], count: int = HEAVIEST_LISTED) -> list[dict]:
    """The `count` heaviest tool results of all files: `path`, `line`, `tool`, `tokens`."""
    items = [dict(item, path=o.path) for o in outcomes for item in o.stats.get("top", ())]
    items.sort(key=lambda item: (-item["tokens"], item["path"], item["line"]))
    return items[:count]


def savings(outcome: Outcome) -> dict:
    """One file's `before` (heuristic), and per command (micro, summarize) the tokens `after` and `saved`,
    or the `reason` it would change nothing."""
    before = heuristic_tokens(outcome.stats)
    row: dict = {"before": before}
    for command, figures in (outcome.stats.get("savings") or {}).items():
        after = figures.get("tokens")
        if after is None:
            row[command] = {"after": before, "saved": 0, "reason": figures.get("reason", "nothing to clear")}
        else:
            row[command] = {"after": after, "saved": before - after}
    return row


# --- the page -------------------------------------------------------------------------------------

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;padding:1em;max-width:72em;color:#222;background:#fff}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;width:100%;table-layout:fixed;margin:.5em 0}
th,td{padding:.2em .4em;border-bottom:1px solid #eee;text-align:right;vertical-align:top}
th{background:#f4f4f4}
.l{text-align:left}.p{text-align:left;overflow-wrap:anywhere;width:34%}.w{width:22%}
.bar{display:flex;height:.9em;background:#eee;min-width:2em}.bar span{display:block;height:100%}
.over{color:#b00;font-weight:bold}.note{color:#666}
.legend span{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 1em;vertical-align:middle}
"""


def _bar(split: dict, scale: int) -> str:
    """A stacked bar of `split` (category -> tokens), as wide as its total's share of `scale`."""
    total = sum(split.values())
    width = 100 * total / scale if scale else 0
    parts = "".join(
        f'<span style="width:{100 * split[name] / total:.2f}%;background:{_COLOURS[name]}" '
        f'title="{CATEGORY_TITLES[name]}: {split[name]:,}"></span>'
        for name in CATEGORIES
        if total and split.get(name)
    )
    return f'<div class="bar" style="width:{width:.2f}%">{parts}</div>'


def _table(headers: list[tuple[str, str]], rows: list[list[str]], caption: str = "") -> str:
    """A table; `headers` are (title, css class); cells are HTML already (escaped by the caller)."""
    head = "".join(f'<th class="{cls}">{_e(title)}</th>' for title, cls in headers)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="{cls}">{cell}</td>' for (_, cls), cell in zip(headers, row, strict=True))
        + "</tr>"
        for row in rows
    )
    caption_html = f'<caption class="l note">{_e(caption)}</caption>' if caption else ""
    return f"<table>{caption_html}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _sessions(files: list[Outcome], max_tokens: int | None) -> str:
    scale = max((heuristic_tokens(o.stats) for o in files), default=0)
    headers = [("session", "p"), ("dialect", "l"), ("tokens", ""), ("messages", ""), ("tool results", "")]
    headers += [("bytes", ""), ("where the tokens go", "l w")]
    rows = []
    for o in files:
        stats = o.stats
        note = ""
        if o.status == OVER:
            note = f' <span class="over">over {max_tokens:,}</span>' if max_tokens is not None else ""
        elif o.status == NO_USAGE:
            note = f' <span class="note">({_e(o.message)})</span>'
        rows.append(
            [
                _e(o.path) + note,
                _e(stats.get("dialect", "")),
                _num(stats.get("tokens")),
                _num(stats.get("messages")),
                _num(stats.get("tool_results")),
                _num(stats.get("bytes")),
                _bar(stats.get("by_category") or {}, scale),
            ]
        )
    return _table(headers, rows)


def _categories(split: dict) -> str:
    total = sum(split.values())
    legend = "".join(
        f'<span style="background:{_COLOURS[name]}"></span>{_e(CATEGORY_TITLES[name])}' for name in CATEGORIES
    )
    rows = [
        [_e(CATEGORY_TITLES[name]), _num(split.get(name, 0)), _percent(split.get(name, 0), total)]
        for name in CATEGORIES
    ]
    rows.append(["<b>all</b>", f"<b>{_num(total)}</b>", _percent(total, total)])
    table = _table([("category", "l"), ("tokens", ""), ("share", "")], rows)
    return f'{_bar(split, total)}<p class="legend">{legend}</p>{table}'


def _tools(files: list[Outcome]) -> str:
    tools = by_tool(files)
    if not tools:
        return '<p class="note">No tool result micro would clear.</p>'
    rows = [[_e(t["tool"]), _num(t["results"]), _num(t["tokens"]), _num(t["largest"])] for t in tools]
    table = _table([("tool", "l"), ("results", ""), ("tokens", ""), ("largest", "")], rows)
    items = heaviest(files)
    listed = [[f"{_e(i['path'])}:{i['line']}", _e(i["tool"]), _num(i["tokens"])] for i in items]
    caption = f"The {len(items)} heaviest, one by one"
    return table + _table([("session:line", "p"), ("tool", "l"), ("tokens", "")], listed, caption)


def _savings(files: list[Outcome]) -> str:
    rows, total = [], {"before": 0, "micro": 0, "summarize": 0}
    for o in files:
        row = savings(o)
        total["before"] += row["before"]
        cells = [_e(o.path), _num(row["before"])]
        for command in ("micro", "summarize"):
            figures = row.get(command)
            if figures is None:
                cells += ["-", "-"]
                continue
            total[command] += figures["saved"]
            reason = f' <span class="note">({_e(figures["reason"])})</span>' if "reason" in figures else ""
            cells += [_num(figures["after"]), _num(figures["saved"]) + reason]
        rows.append(cells)
    before = total["before"]
    rows.append(
        [
            "<b>all sessions</b>",
            f"<b>{_num(before)}</b>",
            "",
            f"<b>{_num(total['micro'])}</b> ({_percent(total['micro'], before)})",
            "",
            f"<b>{_num(total['summarize'])}</b> ({_percent(total['summarize'], before)})",
        ]
    )
    headers = [("session", "p"), ("now", ""), ("after micro", ""), ("saved", "")]
    headers += [("after summarize", ""), ("saved", "")]
    return _table(headers, rows)


def _archives(files: list[Outcome], history: History) -> str:
    rows = []
    for o in files:
        for entry in history(o.path):
            pristine = " (pristine original)" if entry.get("pristine") else ""
            rows.append(
                [
                    _e(o.path),
                    _e(entry.get("time", "")),
                    _e(entry.get("command", "")),
                    _num(entry.get("size_before")),
                    _num(entry.get("size_after")),
                    _e(entry.get("archive", "")) + _e(pristine),
                ]
            )
    if not rows:
        return '<p class="note">No archives: no session here has been changed in place by compactcli.</p>'
    headers = [("session", "p"), ("time (UTC)", "l"), ("command", "l"), ("bytes before", "")]
    headers += [("bytes after", ""), ("archive", "p")]
    return _table(headers, rows)


_POLICY = "default-src 'none'; style-src 'unsafe-inline'"


def page(
    outcomes: list[Outcome], *, method: str, max_tokens: int | None, totals: dict, history: History
) -> str:
    """The whole page. `totals` is the run's added-up figures (report.estimate.added_up)."""
    files = counted(outcomes)
    failed = [o for o in outcomes if o.status == FAILED]
    count = f"{len(files)} session{'s' if len(files) != 1 else ''}"
    title = f"compactcli estimate: {count}, {totals['tokens']:,} tokens ({method})"
    failures = ""
    if failed:
        items = "".join(f"<li>{_e(o.message)}</li>" for o in failed)
        failures = f'<h2 id="failed">Not read</h2><ul>{items}</ul>'
    sections = [
        ("sessions", "Sessions by size", _sessions(files, max_tokens)),
        ("categories", "Where the tokens go", _categories(totals.get("by_category") or {})),
        ("tools", "The heaviest tool results micro would clear, by tool", _tools(files)),
        ("savings", "What micro and summarize would save (heuristic tokens)", _savings(files)),
        ("archives", "Archives", _archives(files, history)),
    ]
    body = "".join(f'<h2 id="{key}">{_e(heading)}</h2>{content}' for key, heading, content in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        # No script, no request: a page that fetches nothing cannot leak what it shows.
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">'
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{_e(title)}</h1>{failures}{body}</body></html>"
    )
