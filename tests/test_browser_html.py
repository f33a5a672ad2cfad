"""estimate --format html in a real headless Chromium: the sections and tables in the rendered DOM, markup
from a session shown as text and never run, widths within the window, a screenshot with the page's
structure, and no request leaving the page (docs/design.md, "estimate --format html")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.browser import CHROMIUM, chromium, pages_requests, recording_proxy
from helpers.cli import run_cli
from helpers.files import write_jsonl
from helpers.html_page import SECTIONS, read_page
from helpers.sessions import tool_calls

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (Debian: apt-get install chromium; .ci/run does)"
)

HOSTILE_TOOL = "</td><script>document.body.dataset.pwned=1</script>"
HOSTILE_FILE = "<img src=x onerror=document.body.dataset.pwned=2>.jsonl"
LONG_FILE = "a-session-name-without-any-space-to-break-it-at-" * 4 + ".jsonl"
# The categories' colours in the page's bars (report/html.py), as RGB.
TEXT, TOOL_INPUTS, TOOL_RESULTS = (0x4E, 0x79, 0xA7), (0xF2, 0x8E, 0x2B), (0xE1, 0x57, 0x59)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page of a folder of three sessions: one with a tool named as markup, one whose file name is
    markup, one whose name is longer than the window is wide."""
    folder = tmp_path_factory.mktemp("sessions")
    calls = [("bash", "x" * 4000), (HOSTILE_TOOL, "y" * 3000)] + [("bash", "short output " * 20)] * 3
    write_jsonl(folder / "tools.jsonl", tool_calls("Look at the logs.", calls))
    write_jsonl(folder / HOSTILE_FILE, tool_calls("Say hello.", [("bash", "hello " * 100)]))
    write_jsonl(folder / LONG_FILE, tool_calls("Count.", [("grep", "z" * 2000)] * 5))
    done = run_cli("estimate", "--format", "html", "--no-cache", folder, text=True)
    assert done.returncode == 0, done.stderr
    page = folder.parent / "report.html"
    page.write_text(done.stdout, encoding="utf-8")
    return page


def test_the_rendered_dom_holds_every_section_and_shows_markup_from_sessions_as_text(report, tmp_path):
    done = chromium(report, tmp_path / "profile", "--dump-dom")
    assert done.returncode == 0, done.stderr
    dom = done.stdout
    headings, tables = read_page(dom)
    assert headings == SECTIONS
    sessions = tables["sessions"][0]
    assert len(sessions) == 4  # a header and three sessions
    assert any(row[0].endswith(HOSTILE_FILE) for row in sessions)
    assert HOSTILE_TOOL in [row[0] for row in tables["tools"][0]]
    assert "data-pwned" not in dom  # neither the tool's script nor the file name's onerror ran
    assert not re.search(r"<(script|img)\b", dom, re.IGNORECASE)


@pytest.mark.parametrize("width", [800, 1280])
def test_the_page_fits_the_window(report, tmp_path, width):
    # A copy that measures itself: the page's policy forbids scripts, so the copy drops it.
    measuring = tmp_path / "measuring.html"
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", report.read_text(encoding="utf-8"))
    script = (
        "<script>const w=innerWidth;const right=Math.max(...[...document.querySelectorAll('table')]"
        ".map(t=>t.getBoundingClientRect().right));const p=document.createElement('pre');p.id='measured';"
        "p.textContent=JSON.stringify({w,scroll:document.documentElement.scrollWidth,right,"
        "tables:document.querySelectorAll('table').length});document.body.append(p)</script>"
    )
    measuring.write_text(text.replace("</body>", script + "</body>"), encoding="utf-8")
    done = chromium(measuring, tmp_path / "profile", f"--window-size={width},1000", "--dump-dom")
    assert done.returncode == 0, done.stderr
    found = re.search(r'<pre id="measured">(.*?)</pre>', done.stdout)
    assert found, "the measuring script did not run"
    measured = json.loads(found.group(1))
    assert measured["w"] == width and measured["tables"] >= 5
    assert measured["scroll"] <= width  # no horizontal scrolling, the long name included
    assert measured["right"] <= width


def _screenshot(report: Path, folder: Path):
    from PIL import Image

    shot = folder / "page.png"
    # No scroll bar: whether the page outgrows the shot depends on the length of the temp folder's path
    # in its tables, and a bar would take the right margin.
    size = "--window-size=1280,1800"
    done = chromium(report, folder / "profile", size, "--hide-scrollbars", f"--screenshot={shot}")
    assert done.returncode == 0, done.stderr
    return Image.open(shot).convert("RGB")


def _margins(image) -> tuple[int, int]:
    from PIL import ImageOps

    left, _, right, _ = ImageOps.invert(image).getbbox()  # the box around everything not white
    return left, image.size[0] - right


def test_the_screenshot_shows_the_pages_structure(report, tmp_path):
    image = _screenshot(report, tmp_path)
    assert image.size == (1280, 1800)
    colours = {colour for _, colour in image.getcolors(maxcolors=1 << 20)}
    inked = sum(count for count, colour in image.getcolors(maxcolors=1 << 20) if colour != (255, 255, 255))
    assert inked > 0.02 * 1280 * 1800  # text, rules and bars: not a blank page
    assert {TEXT, TOOL_INPUTS, TOOL_RESULTS} <= colours  # the stacked bars of where the tokens go
    # The body is centred at most 72em wide: the margins on either side stay empty.
    left, right = _margins(image)
    assert left >= 40 and right >= 40 and abs(left - right) <= 2, (left, right)


def test_no_request_leaves_the_page(report, tmp_path):
    control = tmp_path / "control.html"
    control.write_text(
        '<!DOCTYPE html><img src="http://compactcli.invalid/probe.png"><script>'
        'fetch("http://compactcli.invalid/fetch").catch(e => console.log("failed fetch"))</script>'
    )
    with recording_proxy() as (requests, flags):
        assert chromium(control, tmp_path / "control-profile", *flags, "--dump-dom").returncode == 0
        seen = pages_requests(requests)
        # The proxy sees what a page sends: the control page's image and its failed fetch.
        assert any("compactcli.invalid/probe.png" in line for line in seen), requests
        assert any("compactcli.invalid/fetch" in line for line in seen), requests
        del requests[:]
        assert chromium(report, tmp_path / "profile", *flags, "--dump-dom").returncode == 0
        assert pages_requests(requests) == []
