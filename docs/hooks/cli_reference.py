"""An MkDocs hook that writes the evaluation CLI's reference from its argparse parser.

The page `reference/cli.md` holds a marker; this hook replaces it with every subcommand, its
usage, options, defaults and help, read from the parser itself, so the reference cannot drift
from the command. The parser is named in one place, `PARSER`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

# The function that builds the CLI's top-level parser, as "module:function".
PARSER = "goldeval.cli:build_parser"
# The command the manual teaches (`python -m evaluation` stays an alias of it).
COMMAND = "python -m goldeval"
MARKER = "<!-- cli-reference -->"
PAGE = "reference/cli.md"
USAGE_WIDTH = 88


def on_config(config):
    # Build from this checkout's code, not from whatever copy of the package is installed.
    root = str(Path(config.config_file_path).resolve().parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return config


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} has lost its marker {MARKER}: the CLI reference has no place")
    return markdown.replace(MARKER, render_reference(load_parser(PARSER)))


def load_parser(target: str) -> argparse.ArgumentParser:
    module_name, _, function = target.partition(":")
    return getattr(importlib.import_module(module_name), function)()


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    # argparse has no public way to list a parser's subcommands; `_actions` and the
    # subparsers action's `_choices_actions` are what its own help formatter reads.
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def _with_command(text: str, prog: str) -> str:
    return COMMAND + text[len(prog) :] if text.startswith(prog) else text


def _usage(parser: argparse.ArgumentParser, top_prog: str) -> str:
    formatter = argparse.HelpFormatter(_with_command(parser.prog, top_prog), width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(action: argparse.Action) -> str:
    value = action.default
    if action.required or value in (None, argparse.SUPPRESS, [], ()) or value is False:
        return "—"
    if value is True:
        return "on"
    if isinstance(value, list | tuple):
        return "`" + ",".join(str(part) for part in value) + "`"
    return f"`{value}`"


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%(" in text:
        text = text % {**vars(action), "prog": prog}
    return _cell(text) or "—"


def _option(action: argparse.Action) -> str:
    names = ", ".join(action.option_strings) or action.metavar or action.dest
    if action.nargs != 0 and action.option_strings:
        metavar = action.metavar or (
            "{" + ",".join(map(str, action.choices)) + "}"
            if action.choices
            else action.dest.upper()
        )
        names += f" {metavar}"
    if action.required:
        names += " (required)"
    return "`" + _cell(names) + "`"


def render_command(
    name: str, summary: str, parser: argparse.ArgumentParser, top_prog: str
) -> list[str]:
    lines = [f"## `{COMMAND} {name}` {{#{name}}}", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:] + ".", ""]
    if parser.description:
        lines += [_cell(parser.description), ""]
    lines += ["```text", _usage(parser, top_prog), "```", ""]
    rows = [
        action
        for action in parser._actions
        if action.help is not argparse.SUPPRESS and not isinstance(action, argparse._HelpAction)
    ]
    if rows:
        lines += ["| option | default | meaning |", "| --- | --- | --- |"]
        lines += [f"| {_option(a)} | {_default(a)} | {_help(a, parser.prog)} |" for a in rows]
        lines.append("")
    if parser.epilog:
        lines += [_cell(parser.epilog), ""]
    return lines


def render_reference(parser: argparse.ArgumentParser) -> str:
    commands = _subcommands(parser)
    lines = ["```text", _usage(parser, parser.prog), "```", ""]
    if parser.description:
        lines += [_cell(parser.description), ""]
    lines += ["| command | what it does |", "| --- | --- |"]
    lines += [f"| [`{name}`](#{name}) | {_cell(summary)} |" for name, summary, _ in commands]
    lines.append("")
    for name, summary, sub in commands:
        lines += render_command(name, summary, sub, parser.prog)
    return "\n".join(lines)
