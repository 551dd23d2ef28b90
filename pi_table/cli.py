"""The ``pi-table`` command line (../shared/INTERFACES.md, "Command line").

Each stage registers its own subcommands (``register(subparsers)``); this module only
builds the parser and turns bad input into one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line (no usage dump) and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> Parser:
    """The full ``pi-table`` parser with every stage's subcommands."""
    from pi_table import service
    from pi_table.rules import cli as rules_cli
    from pi_table.vision import cli as vision_cli

    parser = Parser(prog="pi-table", description=__import__("pi_table").__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"pi-table {__import__('pi_table').__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")
    service.register(sub)
    vision_cli.register(sub)
    rules_cli.register(sub)
    from pi_table.outputs import loadtest; loadtest.register(sub)  # noqa: E702
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``pi-table``; returns the exit status (0 ok, 1 failure, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UsageError, ValueError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        sys.stderr.write(f"pi-table: error: {message}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
