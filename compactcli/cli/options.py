"""Option groups shared by the commands, so that every command spells an option the same way.

Each group is a factory returning a click decorator: `input_options()`, `write_options()`,
`micro_options()`, `summarizer_options()`, `cache_option()`. A command module imports these, never
another command module. A group imports what its defaults need only when it is used, so that a command
does not load another's layers (and nothing of the anthropic SDK) just to build its --help.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from compactcli import dialects
from compactcli.core.constants import (
    BACKENDS,
    DEFAULT_MAX_INPUT_TOKENS,
    DEFAULT_PLACEHOLDER,
    DEFAULT_SUMMARY_TOKENS,
    ON_INVALID,
    OPENAI_APIS,
    USER_MESSAGES_TOKENS,
)
from compactcli.run.settings import Inputs, Writes

if TYPE_CHECKING:
    from compactcli.counting.pricing import Price
    from compactcli.layers.micro import MicroOptions
    from compactcli.layers.summarize import Summarizer


class InputPath(click.Path):
    """A local path that must exist, or a URL (s3://, gs://, az://, file://) checked when it is read."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and "://" in value:
            from compactcli.storage import remote

            if remote.is_url(value):
                return value
        return super().convert(value, param, ctx)


def _check_scheduler(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if not value:
        return None
    from compactcli.run import executors

    if not executors.dask_available():
        raise click.UsageError(executors.DASK_EXTRA_HINT, ctx)
    if value.startswith(executors.LOCAL_CLUSTER):
        count = value[len(executors.LOCAL_CLUSTER) :]
        if not count.isdigit() or int(count) < 1:
            raise click.BadParameter("local:N takes a number of workers N >= 1", ctx, param)
    return value


def _decorated(func, decorators: list):
    """`func` under `decorators`, listed top to bottom as they would be written above a def."""
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def _gathered(func, name: str, cls):
    """Call `func` with the options of `cls` passed as one `name=cls(...)` argument. `cls` may be
    named as "module:Class", imported when the command runs (not for --help)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        made = cls
        if isinstance(made, str):
            module, _, attr = made.partition(":")
            made = getattr(importlib.import_module(module), attr)
        kwargs[name] = made(**{field: kwargs.pop(field) for field in made.__dataclass_fields__})
        return func(*args, **kwargs)

    return wrapper


def gather_options(name: str, cls) -> Callable:
    """A decorator: the options named like the fields of dataclass `cls` (or "module:Class") reach
    the command as one `name=cls(...)` argument."""
    return lambda func: _gathered(func, name, cls)


class OutputFormat(click.Choice):
    """--format's choices; a dialect's name (what --format meant in earlier versions) is refused with
    a pointer to --dialect."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value not in self.choices and value in dialects.NAMES:
            self.fail(
                f"{value!r} is a dialect: --format names the output format ({', '.join(self.choices)}); "
                f"use --dialect {value} for the input's dialect",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


def _format_option_list(formats: tuple[str, ...], dialect: bool = True) -> list:
    """--format and --json; `dialect`: the command has --dialect too, which the help points to."""
    return [
        click.option(
            "--format",
            "output_format",
            type=OutputFormat(formats),
            default=formats[0],
            show_default=True,
            help="Output format (stdout)" + ("; --dialect names the input's." if dialect else "."),
        ),
        click.option(
            "--json", "as_json", is_flag=True, help="--format json: one JSON object per file (stdout)."
        ),
    ]


def _with_output_format(func: Callable) -> Callable:
    """Pass `output_format` with --json folded in."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if kwargs.pop("as_json"):
            given = click.get_current_context().get_parameter_source("output_format")
            if given == click.core.ParameterSource.COMMANDLINE and kwargs["output_format"] != "json":
                raise click.UsageError(
                    f"--json is --format json; it cannot go with --format {kwargs['output_format']}"
                )
            kwargs["output_format"] = "json"
        return func(*args, **kwargs)

    return wrapper


def format_options(formats: tuple[str, ...], *, dialect: bool = True) -> Callable:
    """--format (the first of `formats` is the default) and --json (= --format json), passed on as one
    `output_format` value; `dialect=False` for a command without --dialect."""
    return lambda func: _decorated(_with_output_format(func), _format_option_list(formats, dialect))


def dialect_option(help: str = "Transcript dialect (default: detected per file).") -> Callable:
    return click.option("--dialect", "dialect", type=click.Choice(dialects.NAMES), default=None, help=help)


def on_invalid_option(
    help: str = "error: a bad line fails its file (exit 65); keep: pass bad lines through unchanged.",
) -> Callable:
    return click.option(
        "--on-invalid", type=click.Choice(ON_INVALID), default="error", show_default=True, help=help
    )


def _agents_folders(func: Callable) -> Callable:
    """No PATHS: the session folders of the agents found on this machine, named on stderr."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if not kwargs["paths"]:
            from compactcli.core.places import agent_session_folders

            places = agent_session_folders()
            found = [(agent, folder) for agent, folder in places if folder.is_dir()]
            if not found:
                looked = ", ".join(str(folder) for _, folder in places)
                raise click.UsageError(f"no PATHS given, and no agent's session folder found ({looked})")
            said = ", ".join(f"{agent} in {folder}" for agent, folder in found)
            click.echo(f"reading the sessions of {said}", err=True)
            kwargs["paths"] = tuple(str(folder) for _, folder in found)
        return func(*args, **kwargs)

    return wrapper


def input_options(*, formats: tuple[str, ...], agents_folders: bool = False) -> Callable:
    """Paths, discovery, dialect, bad-input handling and how to report (`--format`: `formats`, the
    first one the default). With `agents_folders` (commands that only read), no PATHS means the agents'
    session folders found on the machine."""
    options = [
        # readable=False: an unreadable file is that file's I/O error (exit 74), named or found in a folder.
        click.argument(
            "paths",
            nargs=-1,
            required=not agents_folders,
            type=InputPath(allow_dash=True, exists=True, readable=False),
        ),
        click.option(
            "--glob", "glob", default="*.jsonl", show_default=True, help="Files to pick in folders."
        ),
        dialect_option(),
        on_invalid_option(),
        click.option(
            "-j",
            "--jobs",
            type=click.IntRange(1),
            default=1,
            show_default=True,
            help="Files processed in parallel (one process each).",
        ),
        click.option(
            "--scheduler",
            metavar="ADDRESS",
            envvar="DASK_SCHEDULER_ADDRESS",
            show_envvar=True,
            callback=_check_scheduler,
            help="Run on this Dask cluster (tcp://HOST:8786; local:N starts N local workers) instead of "
            "--jobs. Needs compactcli[dask].",
        ),
        click.option("-v", "--verbose", is_flag=True, help="A line per file on stderr."),
        click.option("-q", "--quiet", is_flag=True, help="No summary line."),
        *_format_option_list(formats),
    ]
    if agents_folders:
        return lambda func: _decorated(
            _agents_folders(_with_output_format(_gathered(func, "inputs", Inputs))), options
        )
    return lambda func: _decorated(_with_output_format(_gathered(func, "inputs", Inputs)), options)


def write_options() -> Callable:
    """Where results go and how carefully."""
    options = [
        click.option(
            "-o",
            "--output",
            type=click.Path(allow_dash=True, dir_okay=False),
            default=None,
            help="Write to this file ('-' = stdout) instead of in place; one input only.",
        ),
        click.option(
            "--output-dir",
            metavar="DIR|URL",
            default=None,
            help="Write each result under DIR or URL (s3://, gs://, az://), keeping the inputs' relative "
            "layout; the originals stay, and .compactcli-manifest.jsonl there says what came from where. "
            "The only way to write to an object store: it has no atomic rename or locks, so files there "
            "are never rewritten in place.",
        ),
        click.option(
            "--archive-dir",
            type=click.Path(file_okay=False),
            default=None,
            help="Where originals are archived (default: .transcripts/ beside each file).",
        ),
        click.option("--check", is_flag=True, help="Change nothing; exit 1 if something would change."),
        click.option("--diff", is_flag=True, help="Change nothing; print a unified diff."),
        click.option("--dry-run", is_flag=True, help="Change nothing; list what would change."),
        click.option(
            "--min-age",
            type=click.FloatRange(0),
            default=0,
            help="Skip files modified less than SECONDS ago (an agent may still be writing).",
        ),
    ]
    return lambda func: _decorated(_gathered(func, "writes", Writes), options)


CACHE_HELP = (
    "Read every file. Without it, a file that is exactly as it was when this command last processed it "
    "with the same options and version (same size, mtime, inode, ctime) is answered from the cache in "
    "$XDG_CACHE_HOME/compactcli (else ~/.cache/compactcli) without being read; nothing is written beside "
    "transcripts."
)


def cache_option(extra_help: str = "") -> Callable:
    """`--no-cache`, passed as `no_cache`: the cache of unchanged files (cache.py)."""
    return click.option("--no-cache", is_flag=True, help=CACHE_HELP + extra_help)


def micro_options(
    *, keep_type: click.ParamType | None = None, keep_help: str | None = None, trigger_help: str | None = None
) -> Callable:
    """Layer 1's options (micro, and replay's simulated micro); `micro_settings` turns them into
    MicroOptions. `keep_type`/`keep_help`/`trigger_help` let replay take several --keep values."""
    options = [
        click.option(
            "--keep",
            type=keep_type or click.IntRange(0),
            default=3,
            show_default=True,
            help=keep_help or "Most recent tool results kept whole, per conversation.",
        ),
        click.option(
            "--min-chars",
            type=click.IntRange(0),
            default=100,
            show_default=True,
            help="Results of at most this many characters are kept.",
        ),
        click.option(
            "--preserve",
            multiple=True,
            metavar="TOOL",
            help="Tool whose results are kept (repeatable; replaces the default read_file, Read, read).",
        ),
        click.option("--no-preserve", is_flag=True, help="Preserve no tool."),
        click.option(
            "--placeholder",
            default=DEFAULT_PLACEHOLDER,
            show_default=True,
            help="What a cleared result becomes; {tool_name} is filled in.",
        ),
        click.option(
            "--clear-multimodal",
            is_flag=True,
            help="Also clear results whose content is a list of blocks.",
        ),
        click.option(
            "--trigger-tokens",
            type=click.IntRange(0),
            default=0,
            show_default=True,
            help=trigger_help or "Leave files whose token estimate is at most N alone (0: always apply).",
        ),
        # Opt-in strategies (docs/design.md, "Micro strategies").
        click.option(
            "--dedupe-reads",
            is_flag=True,
            help="Also clear a file's read result that a later read or write of the file supersedes "
            "(preserved tools too: the newer copy is in the context).",
        ),
        click.option(
            "--keep-images",
            type=click.IntRange(0),
            default=None,
            metavar="N",
            help="Keep only the last N images of each conversation; the others become a placeholder "
            "naming their media type and size.",
        ),
        click.option(
            "--truncate",
            type=HeadTail(),
            default=None,
            metavar="HEAD:TAIL",
            help="Keep the first HEAD and last TAIL characters of a cleared text result (the cut marked "
            "with its length) instead of the placeholder.",
        ),
        click.option(
            "--drop-progress",
            is_flag=True,
            help="Claude Code: drop progress records (the model never sees them); their children are "
            "re-linked to the nearest record kept.",
        ),
        click.option(
            "--drop-sidechains",
            is_flag=True,
            help="Claude Code: drop the records of sub-agents whose Task has returned its result.",
        ),
        click.option(
            "--drop-thinking",
            is_flag=True,
            help="Drop thinking before the current turn (the API needs the current turn's unchanged).",
        ),
    ]
    return lambda func: _decorated(func, options)


class HeadTail(click.ParamType):
    """HEAD:TAIL, two counts of characters (--truncate)."""

    name = "HEAD:TAIL"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from compactcli.layers.micro import Cut

        if isinstance(value, Cut):
            return value
        head, sep, tail = str(value).partition(":")
        if not sep or not head.isdigit() or not tail.isdigit():
            self.fail(f"{value!r} is not HEAD:TAIL (two counts of characters, e.g. 200:200)", param, ctx)
        return Cut(int(head), int(tail))


class PriceType(click.ParamType):
    """IN,CACHED,OUT: USD per million tokens."""

    name = "IN,CACHED,OUT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Price:
        # Imported when a price is given: the commands that take none do not load the price table.
        from compactcli.counting.pricing import Price, parse_price

        if isinstance(value, Price):
            return value
        try:
            return parse_price(str(value))
        except ValueError as err:
            self.fail(str(err), param, ctx)


def micro_settings(given: dict) -> MicroOptions:
    """MicroOptions from the values of `micro_options`: each option sets the field of its name."""
    from dataclasses import fields

    from compactcli.core.constants import DEFAULT_PRESERVE
    from compactcli.layers.micro import MicroOptions

    values = {f.name: given[f.name] for f in fields(MicroOptions) if f.name in given}
    if given["no_preserve"]:
        values["preserve"] = frozenset()
    else:
        values["preserve"] = frozenset(given["preserve"]) or DEFAULT_PRESERVE
    return MicroOptions(**values)


@dataclass(frozen=True)
class SummarizerSettings:
    """What `summarizer_options` gathered: who writes summaries and how."""

    backend: str
    model: str | None
    summary_tokens: int
    max_input_tokens: int
    timeout: float | None
    max_retries: int
    no_redact: bool
    base_url: str | None = None
    openai_api: str = "chat"

    def make(self) -> Summarizer:
        """The summarizer (`auto` resolved); nothing is sent, and the SDK is not imported, before its
        first call. A backend missing a setting it needs (openai's --model) is a usage error."""
        from compactcli.backends import make_summarizer

        try:
            return make_summarizer(
                self.backend,
                model=self.model,
                summary_tokens=self.summary_tokens,
                timeout=self.timeout,
                max_input_tokens=self.max_input_tokens,
                max_retries=self.max_retries,
                redact=not self.no_redact,
                base_url=self.base_url,
                openai_api=self.openai_api,
            )
        except ValueError as err:
            raise click.UsageError(str(err)) from None


def say_api_counting(command: str, summarizer: Summarizer, method: str, redact: bool, quiet: bool) -> None:
    """An offline summarizer whose token counts come from the API: stderr says the API is called, so that
    "--backend digest" is not taken for "nothing leaves the machine" (docs/design.md, "Secrets")."""
    if method != "api" or summarizer.name == "anthropic" or quiet:
        return
    what = "redacted" if redact else "not redacted (--no-redact)"
    click.echo(
        f"{command}: the {summarizer.name} backend is offline, but token counts by the api method call the "
        f"Anthropic API (count_tokens), which is sent the transcript, {what}",
        err=True,
    )


def keep_user_messages_option() -> Callable:
    """What follows each summary (summarize, and replay's simulated compactions)."""
    return click.option(
        "--keep-user-messages",
        type=click.IntRange(0),
        default=USER_MESSAGES_TOKENS,
        show_default=True,
        metavar="TOKENS",
        help="Put the user's own messages verbatim after the summary, the newest within TOKENS (0: none).",
    )


def summarizer_options() -> Callable:
    """Who writes summaries (summarize, and replay's simulated compactions), gathered as
    `summarizer_settings=SummarizerSettings(...)`."""
    options = [
        click.option(
            "--backend",
            type=click.Choice(BACKENDS),
            default="auto",
            show_default=True,
            help="Who writes the summary (see above).",
        ),
        click.option(
            "--model",
            default=None,
            help="Model the backend asks for (see above); needed by --backend openai.",
        ),
        click.option(
            "--base-url",
            default=None,
            metavar="URL",
            help="--backend openai: the server's OpenAI-compatible API, e.g. http://localhost:11434/v1 "
            "(default: $OPENAI_BASE_URL, else OpenAI's).",
        ),
        click.option(
            "--openai-api",
            type=click.Choice(OPENAI_APIS),
            default="chat",
            show_default=True,
            help="--backend openai: Chat Completions (every OpenAI-compatible server has it) or the "
            "Responses API (OpenAI's newer one; vLLM, Ollama and gateways that have it).",
        ),
        click.option(
            "--summary-tokens",
            type=click.IntRange(64),
            default=DEFAULT_SUMMARY_TOKENS,
            show_default=True,
            help="Longest summary (max_tokens of each request).",
        ),
        click.option(
            "--max-input-tokens",
            type=click.IntRange(2_000),
            default=DEFAULT_MAX_INPUT_TOKENS,
            show_default=True,
            help="Transcript tokens per request; more are summarized in parts.",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(0, min_open=True),
            default=None,
            help="Seconds per API attempt (default: 120), or for an agent CLI's whole run (default: 600).",
        ),
        click.option(
            "--max-retries",
            type=click.IntRange(0),
            default=2,
            show_default=True,
            help="Retries of a failed API call (the SDK's; it honours retry-after).",
        ),
        click.option("--no-redact", is_flag=True, help="Do not replace secrets before sending."),
    ]
    return lambda func: _decorated(_gathered(func, "summarizer_settings", SummarizerSettings), options)


class BriefHelpCommand(click.Command):
    """A command whose --help is what a user needs at the terminal: the help, the options named in
    `common`, and a pointer to `--help-all`, which adds `details` (the help's long tail) and every option.
    docs/cli.md is generated from --help-all."""

    def __init__(self, *args: Any, details: str = "", common: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.details = details
        self.common = common
        self.params.append(
            click.Option(
                ["--help-all"],
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=self._help_all,
                help="Every option, and the details.",
            )
        )

    def _help_all(self, ctx: click.Context, param: click.Parameter, value: bool) -> None:
        if not value or ctx.resilient_parsing:
            return
        ctx.meta["help_all"] = True
        click.echo(ctx.get_help(), color=ctx.color)
        ctx.exit()

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        import inspect

        text = inspect.cleandoc(self.help or "")
        if ctx.meta.get("help_all"):
            head, examples, tail = text.partition("\b\nExamples:")  # the details go before the examples
            text = f"{head.rstrip()}\n\n{inspect.cleandoc(self.details)}\n\n{examples}{tail}".rstrip()
        else:
            more = "More: --help-all (every option, and the details; docs/cli.md)."
            text = f"{text}\n\n{more}"
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(text)

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        if ctx.meta.get("help_all") or not self.common or not ctx.meta.get("formatting_help"):
            return params
        help_option = self.get_help_option(ctx)
        return [p for p in params if p.name in (*self.common, "help_all") or p is help_option]

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        ctx.meta["formatting_help"] = True
        try:
            super().format_options(ctx, formatter)
        finally:
            ctx.meta["formatting_help"] = False
