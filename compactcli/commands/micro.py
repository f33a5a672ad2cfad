"""`compactcli micro`: Layer 1, old tool results become short placeholders."""

from __future__ import annotations

from functools import partial

import click

from compactcli import micro_file
from compactcli.commands.common import find_inputs, run_files
from compactcli.commands.options import input_options, write_options
from compactcli.errors import EXIT_CODES_HELP
from compactcli.layers.micro import DEFAULT_PLACEHOLDER, DEFAULT_PRESERVE, MicroOptions
from compactcli.rewrite import FileSettings, process


def micro_options(func):
    for option in reversed(
        [
            click.option(
                "--keep",
                type=click.IntRange(0),
                default=3,
                show_default=True,
                help="Most recent tool results kept whole, per conversation.",
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
                help="Tool whose results are kept (repeatable; replaces the default read_file, Read).",
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
                help="Leave files whose token estimate is at most N alone (0: always apply).",
            ),
        ]
    ):
        func = option(func)
    return func


def micro_options_from(kwargs: dict) -> MicroOptions:
    if kwargs["no_preserve"]:
        preserve: frozenset[str] = frozenset()
    elif kwargs["preserve"]:
        preserve = frozenset(kwargs["preserve"])
    else:
        preserve = DEFAULT_PRESERVE
    return MicroOptions(
        keep=kwargs["keep"],
        min_chars=kwargs["min_chars"],
        preserve=preserve,
        placeholder=kwargs["placeholder"],
        clear_multimodal=kwargs["clear_multimodal"],
        trigger_tokens=kwargs["trigger_tokens"],
    )


@click.command(epilog=EXIT_CODES_HELP)
@input_options
@write_options
@micro_options
def micro(
    paths,
    glob,
    fmt,
    on_invalid,
    jobs,
    verbose,
    quiet,
    as_json,
    output,
    archive_dir,
    check,
    diff,
    dry_run,
    min_age,
    **layer,
):
    """Replace the content of old tool results with a short placeholder (Layer 1).

    PATHS are files, folders (searched for --glob) or '-' for stdin. Files are rewritten in place, the
    original archived first; stdin goes to stdout.
    """
    options = micro_options_from(layer)
    items = find_inputs(paths, glob, archive_dir, output)
    manifest_options = {
        "keep": options.keep,
        "min_chars": options.min_chars,
        "preserve": sorted(options.preserve),
        "placeholder": options.placeholder,
        "clear_multimodal": options.clear_multimodal,
        "trigger_tokens": options.trigger_tokens,
    }
    settings = FileSettings(
        command="micro",
        options=manifest_options,
        output=output,
        archive_dir=archive_dir,
        check=check,
        diff=diff,
        dry_run=dry_run,
        min_age=min_age,
    )
    estimator = None
    if options.trigger_tokens:
        from compactcli import context  # 25 ms of imports that a plain micro run does not need

        estimator = context.estimator()
    analyze = partial(
        micro_file.analyze, options=options, fmt=fmt, on_invalid=on_invalid, estimator=estimator
    )
    worker = partial(process, settings=settings, analyze=analyze)
    run_files(
        items,
        worker,
        jobs=jobs,
        verbose=verbose,
        quiet=quiet,
        as_json=as_json,
        output=output,
        check=check or diff or dry_run,  # every preview counts what would be compacted
    )
