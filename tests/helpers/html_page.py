"""Reading `estimate --format html` back: each section's tables as rows of cell texts, from the page
itself or from the DOM a browser rendered of it (`chromium --dump-dom`)."""

from __future__ import annotations

from html.parser import HTMLParser


class _Sections(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: dict[str, list[list[list[str]]]] = {}  # h2 id -> its tables -> rows -> cells
        self.headings: dict[str, str] = {}
        self._section: str | None = None
        self._heading: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "h2":
            self._section = dict(attrs).get("id") or ""
            self._heading = ""
            self.sections[self._section] = []
        elif tag == "table" and self._section is not None:
            self.sections[self._section].append([])
        elif tag == "tr" and self._section is not None and self.sections[self._section]:
            self.sections[self._section][-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2" and self._section is not None:
            self.headings[self._section] = (self._heading or "").strip()
            self._heading = None
        elif tag in ("td", "th") and self._cell is not None and self._section is not None:
            self.sections[self._section][-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading += data
        if self._cell is not None:
            self._cell.append(data)


def read_page(text: str) -> tuple[dict[str, str], dict[str, list[list[list[str]]]]]:
    """(section id -> heading, section id -> tables), each table a list of rows of cell texts."""
    parser = _Sections()
    parser.feed(text)
    parser.close()
    return parser.headings, parser.sections


def number(cell: str) -> int:
    """The leading figure of a cell such as `1,234` or `400 (10%)`."""
    return int(cell.split()[0].replace(",", ""))
