"""Settings files (docs/design.md, "Configuration").

Where settings come from, weakest first: an option's own default; the configuration file; the
environment variable of an option that has one; the command line. The file is the nearest
`compactcli.toml` or `pyproject.toml` holding a `[tool.compactcli]` table, searched from the current
folder upward (in one folder `compactcli.toml` wins, as `ruff.toml` does over `pyproject.toml`), or the
file given with `compactcli --config FILE`.

Keys are option names without dashes (`keep = 10`, `min-chars = 200`, `min_chars` too). Top-level keys
apply to every command that has the option; a table per command (`[tool.compactcli.micro]`, or
`[micro]` in compactcli.toml) applies to that command and wins over the top level. The values reach
click as the context's `default_map`, so click converts and checks them like typed options.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import click
from click.core import ParameterSource

PROJECT_FILE = "pyproject.toml"
OWN_FILE = "compactcli.toml"
CONFIG_ENV = "COMPACTCLI_CONFIG"

# Options whose value may come from the environment although the option does not say so to click:
# the environment beats the file for them (the command itself reads the variables, in this order).
ENVIRONMENT = {"model": ("COMPACTCLI_MODEL", "MODEL_ID"), "base_url": ("OPENAI_BASE_URL",)}


class ConfigError(click.UsageError):
    """A configuration file that cannot be used: exit 2, naming the file."""


@dataclass(frozen=True)
class Config:
    """The settings of one file: shared keys, and a table per command."""

    path: Path | None = None
    table: str = ""  # how the file names its settings: "[tool.compactcli]" or "" (top level)
    shared: dict = field(default_factory=dict)
    commands: dict[str, dict] = field(default_factory=dict)

    def where(self, command: str | None = None) -> str:
        """`pyproject.toml [tool.compactcli.micro]`: a value's source as `compactcli config` shows it."""
        if self.path is None:
            return "default"
        if command is None:
            return f"{self.path} {self.table}".rstrip()
        table = f"{self.table[:-1]}.{command}]" if self.table else f"[{command}]"
        return f"{self.path} {table}"


def find(start: Path) -> Path | None:
    """The nearest configuration file at or above `start`, if any."""
    for folder in (start, *start.parents):
        own = folder / OWN_FILE
        if own.is_file():
            return own
        project = folder / PROJECT_FILE
        if project.is_file() and _may_name_us(project) and "compactcli" in _read(project).get("tool", {}):
            return project
    return None


def check_trusted(path: Path) -> None:
    """A settings file found by search is obeyed only when the user wrote it, as git's safe.directory
    asks of a repository: owned by the user or root (the file, and a symlink naming it), in a folder
    others cannot write, or can only with the sticky bit (/tmp). A stranger's file could turn off
    redaction, choose where output goes and point --scheduler at their server (docs/design.md, "Trust").
    A file given with --config or $COMPACTCLI_CONFIG was chosen by the user and is not checked."""
    import stat

    trusted = {os.geteuid(), 0}
    try:
        infos = [os.lstat(path), os.stat(path)]
        folders = {os.path.dirname(os.path.abspath(path)), os.path.dirname(os.path.realpath(path))}
        infos_of_folders = [(folder, os.stat(folder)) for folder in sorted(folders)]
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    hint = f"; pass --config {path} to use it anyway, or remove it"
    for info in infos:
        if info.st_uid not in trusted:
            raise ConfigError(
                f"{path}: settings file owned by uid {info.st_uid}, not by you or root: refused{hint}"
            )
    for folder, info in infos_of_folders:
        if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
            raise ConfigError(
                f"{path}: settings file in {folder}, which anyone may write (no sticky bit): refused{hint}"
            )


def load(path: str | Path | None = None, *, start: Path | None = None) -> Config:
    """The configuration in force: `path` when given (`--config`), else `$COMPACTCLI_CONFIG`, else the
    nearest file from `start` (the current folder), if it is trusted (`check_trusted`); an empty
    Config when there is none."""
    given = path or os.environ.get(CONFIG_ENV) or None
    found = Path(given) if given else find(start or Path.cwd())
    if found is None:
        return Config()
    if not given:
        check_trusted(found)
    data = _read(found)
    if "compactcli" in data.get("tool", {}):
        settings, table = data["tool"]["compactcli"], "[tool.compactcli]"
    elif found.name == PROJECT_FILE:
        raise ConfigError(f"{found}: no [tool.compactcli] table")
    else:
        settings, table = data, ""
    if not isinstance(settings, dict):
        raise ConfigError(f"{found}: {table or 'the file'} must be a table")
    shared = {key: value for key, value in settings.items() if not isinstance(value, dict)}
    commands = {key: value for key, value in settings.items() if isinstance(value, dict)}
    return Config(found, table, shared, commands)


def _may_name_us(project: Path) -> bool:
    """Whether a pyproject.toml can hold a [tool.compactcli] table, without parsing it (tomllib costs
    start-up time, and most projects' files have no such table). The key has the word in it however
    it is written (bare, quoted, dotted; \\u escapes of its letters aside), and only three places can
    make it: a table header, a key of the top level, a key of [tool]. A line naming compactcli
    anywhere else ([project] name = "compactcli") cannot. Multi-line strings, which could hide a
    header, are left to the parser."""
    try:
        with open(project, "rb") as f:
            text = f.read()
    except OSError:
        return True  # _read names the file in its error
    if b"compactcli" not in text:
        return False
    if b'"""' in text or b"'''" in text:
        return True
    table = b""  # the top level
    depth = 0  # inside an array value that goes on over lines, a line may start with [ too
    for line in text.splitlines():
        bare = _STRING_OR_COMMENT.sub(b"", line).strip()
        if depth == 0 and bare.startswith(b"["):
            if b"compactcli" in line:
                return True
            header = _HEADER.fullmatch(bare)
            if header is None:
                return True  # not the header of a table as we know them: the parser decides
            # A quoted part is gone from `bare`: such a table is taken for the top level.
            table = header[1].translate(None, b" \t") if bare == line.strip() else b""
        else:
            if b"compactcli" in line and table in (b"", b"tool"):
                return True
            depth += bare.count(b"[") - bare.count(b"]")
            if depth < 0:
                return True
    return False


_STRING_OR_COMMENT = re.compile(rb"""\"(?:[^"\\]|\\.)*\"|'[^']*'|\#.*""")
# A table header ([a.b] or [[a.b]]) with its strings taken out (see _STRING_OR_COMMENT).
_HEADER = re.compile(rb"\[\[?([\w\-. \t]*)\]\]?")


def _read(path: Path) -> dict:
    import tomllib  # only when a settings file exists: most runs have none (start-up time)

    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _options_by_key(command: click.Command) -> dict[str, click.Parameter]:
    """A command's options by the names a file may use: `min-chars`, `min_chars`."""
    keys: dict[str, click.Parameter] = {}
    for param in command.params:
        if not isinstance(param, click.Option) or param.name is None or param.hidden:
            continue
        for flag in (*param.opts, *param.secondary_opts):
            if flag.startswith("--"):
                keys[flag[2:]] = param
                keys[flag[2:].replace("-", "_")] = param
    return keys


def unknown_keys(config: Config, commands: dict[str, click.Command]) -> list[str]:
    """Keys no command takes (shared ones) or the named command does not take; tables of no command.
    Each names the nearest valid name when there is one close enough, as ruff does."""
    problems = []
    known = {key for command in commands.values() for key in _options_by_key(command)}
    problems += [
        f"{config.where()}: unknown option '{key}'{_nearest(key, known)}"
        for key in config.shared
        if key not in known
    ]
    for name, table in config.commands.items():
        if name not in commands:
            problems.append(f"{config.where(name)}: no command '{name}'{_nearest(name, commands)}")
            continue
        options = _options_by_key(commands[name])
        problems += [
            f"{config.where(name)}: '{name}' has no option '{key}'{_nearest(key, options)}"
            for key in table
            if key not in options
        ]
    return problems


def _nearest(name: str, valid: object) -> str:
    import difflib

    close = difflib.get_close_matches(name, sorted(valid), n=1)  # type: ignore[call-overload]
    return f" (did you mean '{close[0]}'?)" if close else ""


def refuse_unknown(config: Config, commands: dict[str, click.Command]) -> None:
    """Every command refuses a settings file with a key or table no command takes (exit 2): a typo
    would otherwise be a setting silently not in force."""
    problems = unknown_keys(config, commands)
    if problems:
        raise ConfigError("\n".join(problems))


def defaults_for(config: Config, name: str, command: click.Command) -> dict:
    """The `default_map` of one command: its table over the shared keys, each value checked by its
    option's type; an option whose environment variable is set keeps the environment's value."""
    options = _options_by_key(command)
    table = config.commands.get(name, {})
    for key in table:
        if key not in options:
            raise ConfigError(f"{config.where(name)}: '{name}' has no option '{key}'")
    defaults: dict = {}
    for where, settings in ((config.where(), config.shared), (config.where(name), table)):
        for key, value in settings.items():
            param = options.get(key)
            if param is None or _set_in_environment(param):
                continue
            _check(param, value, f"{where}: {key}")
            defaults[param.name] = value
    return defaults


def _set_in_environment(param: click.Parameter) -> str | None:
    names = param.envvar or ENVIRONMENT.get(param.name or "", ())
    for env in (names,) if isinstance(names, str) else names:
        if os.environ.get(env):
            return env
    return None


def _check(param: click.Parameter, value: object, where: str) -> None:
    if param.multiple and not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list, as in {param.name} = [{value!r}]")
    try:
        with click.Context(click.Command("config")) as ctx:
            param.type_cast_value(ctx, value)
    except click.BadParameter as exc:
        raise ConfigError(f"{where}: {exc.message}") from None


@dataclass(frozen=True)
class Value:
    """One option of one command as `compactcli config` shows it."""

    command: str
    option: str
    value: object
    source: str


def _context(config: Config, name: str, command: click.Command) -> click.Context:
    """`command`'s context without command-line options: its values are those of the file,
    the environment and the defaults."""
    defaults = defaults_for(config, name, command)
    return command.make_context(name, [], default_map=defaults, resilient_parsing=True)


def values_for(config: Config, name: str, command: click.Command) -> dict:
    """Every parameter of `command` by name, as a run without command-line options would have it."""
    return _context(config, name, command).params


def values_in_force(config: Config, name: str, command: click.Command) -> list[Value]:
    """Every option of `command` with the value it would have without command-line options."""
    ctx = _context(config, name, command)
    table = config.commands.get(name, {})
    rows = []
    for param in command.params:
        if not isinstance(param, click.Option) or param.name is None or param.hidden:
            continue
        if param.name in ("help", "version") or param.is_eager:
            continue
        value = ctx.params.get(param.name)
        env = _set_in_environment(param)
        source = ctx.get_parameter_source(param.name)
        if env:
            where = f"environment ${env}"
            if source != ParameterSource.ENVIRONMENT:
                value = os.environ[env]
        elif source == ParameterSource.DEFAULT_MAP:
            in_table = any(_options_by_key(command).get(key) is param for key in table)
            where = config.where(name) if in_table else config.where()
        else:
            where = "default"
        rows.append(Value(name, _long_flag(param), _plain(value), where))
    return rows


def _long_flag(param: click.Parameter) -> str:
    return next((flag for flag in param.opts if flag.startswith("--")), param.opts[0])


def _plain(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value
