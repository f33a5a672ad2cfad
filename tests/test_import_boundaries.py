"""Who may import whom: each tier only the tiers below it, no module through others back to itself, commands
never each other, and the commands that need no model never load anthropic's code (checked in a real
subprocess)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from compactcli.cli import COMMANDS, SHORT_HELP, cli

PACKAGE = Path(__file__).resolve().parent.parent / "compactcli"
SAMPLES = PACKAGE.parent / "samples"


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, as a dotted name (`from a import b` gives a and a.b)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_command_module_imports_another() -> None:
    offenders = {}
    for path in sorted((PACKAGE / "cli" / "commands").glob("*.py")):
        commands = {n for n in imported_modules(path) if n.startswith("compactcli.cli.commands")}
        if commands:
            offenders[path.name] = sorted(commands)
    assert offenders == {}


# Which tier (folder of compactcli/) may import which: docs/design.md, "Parts". Every import counts,
# those inside functions too (they are how a cycle hides). `compactcli` itself (its __version__) is open
# to all; nothing but the entry point (__main__) imports cli/.
MAY_IMPORT: dict[str, set[str]] = {
    "core": set(),
    "dialects": {"core"},
    "counting": {"core", "dialects"},
    "layers": {"core", "dialects", "counting"},
    "backends": {"core", "dialects", "counting", "layers"},
    "storage": {"core"},
    "report": {"core", "counting"},
    "pipelines": {"core", "dialects", "counting", "layers", "backends", "storage", "report"},
    "run": {"core", "dialects", "counting", "layers", "backends", "storage", "report", "pipelines"},
    "hooks": {"core", "dialects", "counting", "layers", "backends", "storage", "report", "pipelines", "run"},
    "cli": {
        "core",
        "dialects",
        "counting",
        "layers",
        "backends",
        "storage",
        "report",
        "pipelines",
        "run",
        "hooks",
    },
}
ROOT_MODULES = {"__init__.py", "__main__.py"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    target = PACKAGE.parent.joinpath(*name.split("."))
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def ours(path: Path) -> set[str]:
    """The compactcli modules a file imports, by their dotted names: `from compactcli.core import errors`
    is compactcli.core.errors; `from compactcli.dialects import Dialect` is compactcli.dialects."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "compactcli")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "compactcli":
                continue
            names = [f"{node.module}.{a.name}" for a in node.names]
            modules = [n for n in names if _is_module(n)]
            found.update(modules)
            if len(modules) < len(names):
                found.add(node.module)
    return found


def tier(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else ""


def test_every_folder_of_the_package_is_a_tier_with_rules() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(MAY_IMPORT)
    assert {p.name for p in PACKAGE.glob("*.py")} == ROOT_MODULES


def test_each_tier_imports_only_the_tiers_below_it() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        mine = tier(module_name(path))
        allowed = MAY_IMPORT.get(mine, set(MAY_IMPORT)) | {mine, ""}
        if mine == "":
            allowed.add("cli")
        wrong = sorted(n for n in ours(path) if tier(n) not in allowed)
        if wrong:
            offenders[str(path.relative_to(PACKAGE))] = wrong
    assert offenders == {}


def test_no_module_imports_itself_back_through_others() -> None:
    graph = {module_name(p): ours(p) - {"compactcli"} for p in PACKAGE.rglob("*.py")}
    seen: dict[str, int] = {}
    cycles = []

    def visit(node: str, stack: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt == node:
                continue
            if seen.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt] if nxt in stack else [node, nxt])
            elif nxt not in seen:
                visit(nxt, [*stack, nxt])
        seen[node] = 2

    for node in sorted(graph):
        if node not in seen:
            visit(node, [node])
    assert cycles == []


def test_import_rules_see_imports_inside_functions(tmp_path: Path) -> None:
    # The rules would pass vacuously if `ours` missed a function-level import.
    source = tmp_path / "probe.py"
    source.write_text(
        "def f():\n    from compactcli.cli import options\n    from compactcli import dialects\n"
    )
    assert ours(source) == {"compactcli.cli.options", "compactcli.dialects"}


LOADED = """
import json, sys
from compactcli.cli import cli
try:
    cli.main(sys.argv[1:], prog_name="compactcli")
except SystemExit as done:
    code = done.code
names = sorted(m for m in sys.modules if m.startswith(("anthropic", "httpx", "compactcli.")))
print(json.dumps({"code": code, "modules": names}), file=sys.stderr)
"""


def loaded_modules(
    *args: str, cwd: Path, prelude: str = "", env: dict | None = None
) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", prelude + LOADED, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], report["modules"]


@pytest.mark.parametrize(
    "args",
    [
        ("micro", "--check", "."),
        ("micro", "."),
        ("estimate", "."),
        ("validate", "."),
        ("replay", "--backend", "digest", "claude-code/session.jsonl"),
        ("replay", "--backend", "digest", "--keep", "2,5", "anthropic/session.jsonl"),
    ],
)
def test_commands_without_a_model_never_load_anthropic(tmp_path: Path, args: tuple[str, ...]) -> None:
    shutil.copytree(SAMPLES, tmp_path / "samples")
    code, modules = loaded_modules(*args, cwd=tmp_path / "samples")
    assert code in (0, 1)  # it ran (micro --check may find something to do)
    assert [m for m in modules if m.startswith(("anthropic", "httpx"))] == []
    assert "compactcli.backends.anthropic" not in modules
    assert [
        m
        for m in modules
        if m.startswith("compactcli.cli.commands.") and m != f"compactcli.cli.commands.{args[0]}"
    ] == []


def test_group_help_imports_no_command(tmp_path: Path) -> None:
    code, modules = loaded_modules("--help", cwd=tmp_path)
    assert code == 0
    assert [m for m in modules if m.startswith("compactcli.cli.commands")] == []


def test_group_help_lists_each_command_with_its_own_help() -> None:
    """The short help the group prints without importing a command is the command's own."""
    ctx = click.Context(cli)
    assert sorted(SHORT_HELP) == sorted(COMMANDS)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        first = " ".join((command.help or "").split("\n\n")[0].split())
        assert SHORT_HELP[name] == first, name


DIALECT_MODULES = ("compactcli.dialects.",)
# What only reading or writing a file needs.
# The storage modules that read, archive and replace files (archives and remote only name things).
STORAGE_WORK = tuple(
    f"compactcli.storage.{name}"
    for name in ("fileio", "folders", "locks", "manifest", "replace", "writers", "restore")
)
FILE_WORK = ("compactcli.run.rewrite", *STORAGE_WORK, "compactcli.pipelines.micro_file")


def test_micro_help_imports_no_dialect_no_runner_and_no_file_work(tmp_path: Path) -> None:
    code, modules = loaded_modules("micro", "--help", cwd=tmp_path)
    assert code == 0
    assert [m for m in modules if m.startswith(DIALECT_MODULES)] == []
    assert [m for m in modules if m.startswith(FILE_WORK)] == []
    assert [m for m in modules if m in ("compactcli.run.runner", "compactcli.run.cache")] == []


def test_a_run_the_cache_answers_imports_no_dialect_and_no_file_work(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES, tmp_path / "samples")
    # No waiting for the files to settle: the cache remembers files changed just now.
    prelude = "from compactcli.run import cache\ncache.SETTLE_SECONDS = 0.0\n"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache-home"))
    runs = [
        loaded_modules("micro", ".", cwd=tmp_path / "samples", prelude=prelude, env=env) for _ in range(3)
    ]
    # The first run compacts the samples, the second finds them unchanged and remembers them, the
    # third is answered by the cache.
    assert [code for code, _ in runs] == [0, 0, 0]
    assert "compactcli.pipelines.micro_file" in runs[1][1]
    again = runs[2][1]
    assert [m for m in again if m.startswith(DIALECT_MODULES)] == []
    assert [m for m in again if m.startswith(FILE_WORK)] == []
    assert "compactcli.layers.micro" not in again  # its worker is made only when a file is read


@pytest.mark.parametrize(
    ("command", "not_loaded"),
    [
        ("estimate", ("compactcli.run.runner", "compactcli.report.estimate")),
        ("validate", ("compactcli.run.runner", "compactcli.run.cache")),
        ("restore", (*STORAGE_WORK, "compactcli.run.runner")),
        ("prune", (*STORAGE_WORK, "compactcli.storage.prune")),
    ],
)
def test_a_command_help_imports_what_only_its_run_needs_later(
    tmp_path: Path, command: str, not_loaded: tuple[str, ...]
) -> None:
    code, modules = loaded_modules(command, "--help", cwd=tmp_path)
    assert code == 0
    assert [m for m in modules if m in not_loaded] == []


# What no command's --help may load: reading and writing transcripts, token counting, the layers that
# do the work, the summarizers (redact's patterns alone take ~10 ms to compile), the replay. Option
# declarations take their defaults and choices from compactcli.core.constants instead.
HEAVY_FOR_HELP = (
    "compactcli.backends",
    "compactcli.run.cache",
    "compactcli.report.chart",
    "compactcli.pipelines.context",
    "compactcli.dialects.",
    "compactcli.pipelines.estimate_file",
    "compactcli.core.jsonio",
    "compactcli.layers.estimate",
    "compactcli.layers.replay",
    "compactcli.layers.summarize",
    "compactcli.core.redact",
    "compactcli.pipelines.replay_file",
    "compactcli.run.rewrite",
    "compactcli.run.runner",
    *STORAGE_WORK,
    "compactcli.pipelines.summarize_file",
    "compactcli.counting.tokens",
)
# Where a help text itself is made from a module's table (validate lists the rules it checks).
HELP_NEEDS = {"validate": ("compactcli.core.jsonio", "compactcli.dialects.")}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_command_help_loads_the_work_behind_it(tmp_path: Path, command: str) -> None:
    code, modules = loaded_modules(command, "--help", cwd=tmp_path)
    assert code == 0
    allowed = HELP_NEEDS.get(command, ())
    heavy = [m for m in modules if m.startswith(HEAVY_FOR_HELP) and not m.startswith(allowed)]
    assert heavy == []
    assert [m for m in modules if m.startswith(("anthropic", "httpx"))] == []


def test_the_cycle_collector_runs_again_once_the_command_is_imported(tmp_path: Path) -> None:
    # main() pauses it for the imports only: a long run must not go without it.
    script = (
        "import gc, sys\n"
        "from compactcli.cli import main\n"
        "sys.argv = ['compactcli', 'validate', '-q', 'a.jsonl']\n"
        "try:\n    main()\nexcept SystemExit as done:\n    code = done.code\n"
        "print(code, gc.isenabled(), gc.get_freeze_count() > 0)\n"
    )
    (tmp_path / "a.jsonl").write_text('{"role": "user", "content": "hi"}\n')
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.stdout.split() == ["0", "True", "True"], done.stderr


# What a local micro run has no use for: the object-store module (only a URL needs it) and the price
# table (only the commands that take a price); nor, when its results go elsewhere (-o, --no-cache), the
# cache.
NOT_FOR_LOCAL_MICRO = ("compactcli.storage.remote", "compactcli.counting.pricing")


@pytest.mark.parametrize(
    ("args", "not_loaded"),
    [
        (("micro", "-q", "-o", "out.jsonl", "codex/rollout.jsonl"), ("compactcli.run.cache",)),
        (("micro", "-q", "--no-cache", "."), ("compactcli.run.cache",)),
        (("micro", "-q", "."), ()),
    ],
)
def test_a_local_micro_run_loads_no_object_store_no_prices_and_no_unused_cache(
    tmp_path: Path, args: tuple[str, ...], not_loaded: tuple[str, ...]
) -> None:
    shutil.copytree(SAMPLES, tmp_path / "samples")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache-home"))
    code, modules = loaded_modules(*args, cwd=tmp_path / "samples", env=env)
    assert code == 0
    assert "compactcli.dialects.codex" in modules  # detection loads every dialect
    assert [m for m in modules if m in (*NOT_FOR_LOCAL_MICRO, *not_loaded)] == []
