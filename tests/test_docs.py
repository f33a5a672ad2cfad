"""The docs cannot drift from the code: every citation of docs/design.md names a heading it has, its Parts
table names every folder and module of the package, and docs/cli.md is generated from the --help pages."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design.md"
CITING = [ROOT / "compactcli", ROOT / "tests", ROOT / "scripts"]
# `docs/design.md, "Heading"`, the comma and the quote possibly on the next line of a comment
CITATION = re.compile(r'docs/design\.md,\s*(?:#\s*)?"([^"]+)"')
ANY_MENTION = re.compile(r"design\.md", re.IGNORECASE)


def headings() -> list[str]:
    return [line.lstrip("#").strip() for line in DESIGN.read_text().splitlines() if line.startswith("#")]


def sources() -> list[Path]:
    return sorted(p for folder in CITING for p in folder.rglob("*.py") if p.name != "test_docs.py")


def test_headings_are_unique_so_a_citation_names_one() -> None:
    names = headings()
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_every_citation_names_a_heading_of_docs_design_md() -> None:
    known = set(headings())
    wrong = {}
    for path in sources():
        text = path.read_text()
        cited = [" ".join(name.replace("#", " ").split()) for name in CITATION.findall(text)]
        missing = [name for name in cited if name not in known]
        # every mention of a design document is a citation of this one, in this form
        bare = len(ANY_MENTION.findall(text)) - len(cited)
        if missing or bare:
            wrong[str(path.relative_to(ROOT))] = {"unknown headings": missing, "not cited by heading": bare}
    assert wrong == {}


def test_the_citation_check_finds_a_wrong_heading(tmp_path: Path) -> None:
    text = '# docs/design.md, "Dialects" and docs/design.md, "No such part"; see design.md 4\n'
    assert CITATION.findall(text) == ["Dialects", "No such part"]
    assert len(ANY_MENTION.findall(text)) == 3


def test_the_parts_table_names_every_folder_and_module() -> None:
    text = DESIGN.read_text()
    table = text[text.index("## Parts") : text.index("\n## ", text.index("## Parts") + 1)]
    package = ROOT / "compactcli"
    missing = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if len(rel.parts) == 1:
            named = f"`{rel.name}`" in table
        else:
            row = next((r for r in table.splitlines() if r.startswith(f"| `{rel.parts[0]}/`")), "")
            named = bool(row) and (f"`{rel.name}`" in row or rel.name == "__init__.py")
        if not named:
            missing.append(str(rel))
    assert missing == []


def test_the_command_reference_is_generated_from_the_help() -> None:
    """docs/cli.md is what scripts/cli_reference.py makes of the commands' --help today."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "cli_reference.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
