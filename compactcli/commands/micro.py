"""`compactcli micro`: Layer 1, old tool results become short placeholders."""

from __future__ import annotations

from functools import partial

import click

from compactcli import micro_file
from compactcli.commands.common import find_inputs, run_files
from compactcli.commands.options import Inputs, Writes, input_options, write_options
from compactcli.errors import EXIT_CODES_HELP
from compactcli.layers.micro import DEFAULT_PLACEHOLDER, DEFAULT_PRESERVE, MicroOptions
from compactcli.rewrite import process


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
def micro(inputs: Inputs, writes: Writes, **layer):
    """Replace the content of old tool results with a short placeholder (Layer 1).

    PATHS are files, folders (searched for --glob) or '-' for stdin. Files are rewritten in place, the
    original archived first; stdin goes to stdout.
    """
    options = micro_options_from(layer)
    items = find_inputs(inputs.paths, inputs.glob, writes.archive_dir, writes.output)
    manifest_options = {
        "keep": options.keep,
        "min_chars": options.min_chars,
        "preserve": sorted(options.preserve),
        "placeholder": options.placeholder,
        "clear_multimodal": options.clear_multimodal,
        "trigger_tokens": options.trigger_tokens,
    }
    estimator = None
    if options.trigger_tokens:
        from compactcli import context  # 25 ms of imports that a plain micro run does not need

        estimator = context.estimator()
    analyze = partial(
        micro_file.analyze, options=options, fmt=inputs.fmt, on_invalid=inputs.on_invalid, estimator=estimator
    )
    worker = partial(process, settings=writes.settings("micro", manifest_options), analyze=analyze)
    run_files(items, worker, inputs, writes, verb="compacted")
