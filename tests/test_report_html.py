"""estimate --format html: the page's figures against values worked out by hand, escaping, and the page of
a real folder against what the commands themselves say (docs/design.md, "estimate --format html")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers.cli import run_cli
from helpers.files import write_jsonl
from helpers.html_page import number, read_page
from helpers.sessions import tool_calls

from compactcli.core.constants import UNDER
from compactcli.core.errors import OK
from compactcli.report import Outcome
from compactcli.report.estimate import added_up
from compactcli.report.html import by_tool, counted, heaviest, page, savings

SECTIONS = {
    "sessions": "Sessions by size",
    "categories": "Where the tokens go",
    "tools": "The heaviest tool results micro would clear, by tool",
    "savings": "What micro and summarize would save (heuristic tokens)",
    "archives": "Archives",
}


def _outcome(
    path: str, tokens: int, split: dict, top: list[tuple[str, int, int]], micro: dict, summarize: dict
) -> Outcome:
    stats = {
        "dialect": "anthropic",
        "tokens": tokens,
        "by_category": split,
        "messages": 4,
        "tool_results": len(top),
        "bytes": 10 * tokens,
        "top": [{"tool": tool, "tokens": n, "line": line, "tool_use_id": ""} for tool, n, line in top],
        "savings": {"micro": micro, "summarize": summarize},
    }
    return Outcome(path, UNDER, OK, "", stats)


A = _outcome(
    "a.jsonl",
    1000,
    {"text": 100, "tool_inputs": 50, "tool_results": 800, "thinking": 50, "images": 0},
    [("bash", 300, 5), ("bash", 200, 9), ("grep", 250, 7)],
    {"cleared": 3, "tokens": 600},
    {"summarized": 6, "kept": 0, "tokens": 150},
)
B = _outcome(
    "b.jsonl",
    3000,
    {"text": 2000, "tool_inputs": 0, "tool_results": 1000, "thinking": 0, "images": 0},
    [("grep", 900, 2)],
    {"cleared": 0, "tokens": None},
    {"reason": "nothing to summarize"},
)


def test_the_figures_add_up_as_worked_out_by_hand():
    assert [o.path for o in counted([A, B])] == ["b.jsonl", "a.jsonl"]  # largest first
    assert by_tool([A, B]) == [
        {"tool": "grep", "results": 2, "tokens": 1150, "largest": 900},  # 250 + 900
        {"tool": "bash", "results": 2, "tokens": 500, "largest": 300},  # 300 + 200
    ]
    assert [(i["path"], i["line"], i["tokens"]) for i in heaviest([A, B], 2)] == [
        ("b.jsonl", 2, 900),
        ("a.jsonl", 5, 300),
    ]
    assert savings(A) == {
        "before": 1000,  # 100 + 50 + 800 + 50
        "micro": {"after": 600, "saved": 400},
        "summarize": {"after": 150, "saved": 850},
    }
    assert savings(B) == {
        "before": 3000,
        "micro": {"after": 3000, "saved": 0, "reason": "nothing to clear"},
        "summarize": {"after": 3000, "saved": 0, "reason": "nothing to summarize"},
    }


def test_the_page_shows_those_figures_in_its_sections():
    text = page([A, B], method="auto", max_tokens=None, totals=added_up([A, B]), history=lambda path: [])
    headings, tables = read_page(text)
    assert headings == SECTIONS
    assert "<h1>compactcli estimate: 2 sessions, 4,000 tokens (auto)</h1>" in text  # 1000 + 3000
    sessions = tables["sessions"][0][1:]
    assert [row[0] for row in sessions] == ["b.jsonl", "a.jsonl"]
    categories = {row[0]: row[1:] for row in tables["categories"][0][1:]}
    assert categories["text"] == ["2,100", "52%"]  # 100 + 2000 of 4000
    assert categories["tool results"] == ["1,800", "45%"]
    assert categories["all"] == ["4,000", "100%"]
    assert tables["tools"][0][1:] == [["grep", "2", "1,150", "900"], ["bash", "2", "500", "300"]]
    total = tables["savings"][0][-1]
    assert total[0] == "all sessions" and number(total[1]) == 4000
    assert total[3] == "400 (10%)" and total[5] == "850 (21%)"
    assert tables["archives"] == []  # no history: a sentence, no table


def test_every_string_from_a_session_is_escaped():
    hostile = "</td><script>document.body.dataset.pwned=1</script>"
    outcome = _outcome(
        '<img src=x onerror="alert(1)">.jsonl',
        10,
        {"text": 10},
        [(hostile, 5, 1)],
        {"cleared": 1, "tokens": 5},
        {"reason": "<b>not</b>"},
    )
    history = [{"time": "<i>t</i>", "command": "<script>x</script>", "archive": "<a>", "size_before": 1}]
    totals = added_up([outcome])
    text = page([outcome], method="auto", max_tokens=None, totals=totals, history=lambda path: history)
    assert "<script" not in text.lower() and "<img" not in text and "<i>" not in text and "<a>" not in text
    assert "&lt;/td&gt;&lt;script&gt;document.body.dataset.pwned=1&lt;/script&gt;" in text
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;.jsonl" in text
    _, tables = read_page(text)
    assert tables["tools"][0][1][0] == hostile  # shown as the text it is
    assert tables["archives"][0][1][2] == "<script>x</script>"


# --- a real folder, through the installed command ------------------------------------------------

# Six calls; micro keeps the last 3 results (--keep), so it clears the first three: bash, grep, bash.
CALLS = [("bash", "a" * 3000), ("grep", "b" * 2000), ("bash", "c" * 1000), ("bash", "d" * 500)]
CALLS += [("grep", "e" * 400), ("bash", "f" * 300)]


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    write_jsonl(folder / "big.jsonl", tool_calls("Look at the logs.", CALLS))
    write_jsonl(folder / "small.jsonl", tool_calls("Say hello.", [("bash", "hello")]))
    return folder


def _heuristic(path: Path) -> int:
    done = run_cli("estimate", "--method", "heuristic", "--json", "--no-cache", path, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["stats"]["tokens"]


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_page_of_a_folder_agrees_with_micro_summarize_and_restore_run_apart(tmp_path):
    folder = _folder(tmp_path)
    before = _tree(folder)
    done = run_cli("estimate", "--format", "html", "--no-cache", folder, text=True)
    assert done.returncode == 0, done.stderr
    assert _tree(folder) == before  # estimate only reads: no archive, no temp file left
    headings, tables = read_page(done.stdout)
    assert headings == SECTIONS
    big = str(folder / "big.jsonl")
    assert [row[0] for row in tables["sessions"][0][1:]] == [big, str(folder / "small.jsonl")]
    tools = {row[0]: row[1:] for row in tables["tools"][0][1:]}
    assert {name: number(cells[0]) for name, cells in tools.items()} == {"bash": 2, "grep": 1}
    row = next(r for r in tables["savings"][0] if r[0] == big)
    now = _heuristic(folder / "big.jsonl")
    assert number(row[1]) == now

    # What micro and summarize would leave, as the commands themselves write it elsewhere.
    micro_out, summary_out = tmp_path / "micro.jsonl", tmp_path / "summary.jsonl"
    assert run_cli("micro", "-q", "-o", micro_out, folder / "big.jsonl").returncode == 0
    summarized = run_cli("summarize", "-q", "--backend", "digest", "-o", summary_out, folder / "big.jsonl")
    assert summarized.returncode == 0, summarized.stderr
    assert number(row[2]) == _heuristic(micro_out) < now
    assert number(row[3]) == now - _heuristic(micro_out)
    assert number(row[4]) == _heuristic(summary_out)
    assert number(row[5]) == now - _heuristic(summary_out)

    # The archives: micro in place, then the page lists what restore --list lists.
    size = (folder / "big.jsonl").stat().st_size
    assert run_cli("micro", "-q", folder / "big.jsonl").returncode == 0
    listed = run_cli("restore", "--list", "--json", folder / "big.jsonl", text=True)
    entry = json.loads(listed.stdout)["stats"]["history"][0]
    done = run_cli("estimate", "--format", "html", "--no-cache", folder, text=True)
    _, tables = read_page(done.stdout)
    archives = tables["archives"][0]
    assert archives[1][:5] == [big, entry["time"], "micro", f"{size:,}", f"{entry['size_after']:,}"]
    assert archives[1][5] == entry["archive"] + " (pristine original)"
    assert Path(entry["archive"]).read_bytes() == before["big.jsonl"]


def test_a_file_that_cannot_be_read_is_named_and_the_rest_is_shown(tmp_path):
    folder = _folder(tmp_path)
    (folder / "torn.jsonl").write_text('{"role": "user", "content": "hi"}\n{not json\n')
    done = run_cli("estimate", "--format", "html", "--no-cache", folder, text=True)
    assert done.returncode == 65
    headings, tables = read_page(done.stdout)
    assert headings["failed"] == "Not read"
    assert f"{folder / 'torn.jsonl'}:2" in done.stdout
    assert len(tables["sessions"][0]) == 3  # the header and the two readable sessions


def test_calibrate_prints_no_page(tmp_path):
    shutil.copytree(Path(__file__).parent.parent / "samples" / "claude-code", tmp_path / "cc")
    done = run_cli("estimate", "--calibrate", "--format", "html", tmp_path / "cc", text=True)
    assert done.returncode == 2 and "--calibrate prints table, json or csv" in done.stderr
