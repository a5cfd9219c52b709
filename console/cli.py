"""``ussd-console``: the command line (Rich for people, ``--json`` for scripts).

Errors that stop a command are one line on stderr and a non-zero exit; a
traceback never reaches the operator.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import os
import sqlite3
import sys

from core import i18n
from core.config import read_toml
from core.home import Home, private_umask
from core.i18n import N_, _
from core.rules.text import escape_text, one_line, said

from .commands import COMMANDS, MODULES, default_command
from .commands.common import examples
from .commands.options import common_parser
from .errors import CommandError, StdoutClosed, stdout_closed
from .startup import import_store_driver

EXIT_ERROR = 2


EXAMPLES = (  # the command lines as typed; what each does, in the operator's language
    ("ussd-console demo", N_("a throwaway home fed by a simulated gateway")),
    ("ussd-console --home /srv/ussd", N_("the operator console on a home")),
    ("ussd-console --home /srv/ussd watch", N_("the receiver without a console (a server)")),
    ("ussd-console ingest kakuma-0800.txt", N_("take in a file by hand")),
    ("ussd-console status", N_("totals, per-path counts, retention")),
    ("ussd-console quarantine", N_("conflicts waiting for an operator")),
    ("ussd-console help quarantine", N_("a command's own options and examples (or: COMMAND --help)")),
)


def examples_epilog() -> str:
    width = max(len(line) for line, _words in EXAMPLES) + 2
    return _("examples:") + "\n" + "".join(f"  {line:<{width}}{_(words)}\n" for line, words in EXAMPLES)


def version() -> str:
    import importlib.metadata  # only for --version: every other command is spared its import

    try:
        return importlib.metadata.version("ussd-console")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


class Parser(argparse.ArgumentParser):
    """argparse with "did you mean" for a mistyped command or choice (as Python 3.14's
    ``suggest_on_error``); every sub-command's parser is one too (``add_subparsers`` makes
    them of the parent's class)."""

    def _check_value(self, action, value):
        if action.choices is not None and value not in action.choices:
            choices = [str(c) for c in action.choices]
            close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.6)
            hint = _("; did you mean %(choice)r?", choice=close[0]) if close else ""
            listed = (_("ussd-console --help lists them") if len(choices) > 12
                      else _("choose from %(choices)s", choices=", ".join(map(repr, choices))))
            raise argparse.ArgumentError(action, _("invalid choice: %(value)r%(hint)s (%(listed)s)",
                                                   value=value, hint=hint, listed=listed))
        return super()._check_value(action, value)


def add_help_command(sub, parser: argparse.ArgumentParser) -> None:
    """``ussd-console help [COMMAND ...]``: the same as ``--help``, of the program or of that command."""
    p = sub.add_parser("help", help=_("this help, or a command's own: ussd-console help COMMAND"),
                       epilog=examples("ussd-console help", "ussd-console help cases",
                                       "ussd-console help operator add"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("topic", nargs="*", metavar="COMMAND", help=_("a command (and its action), such as: operator add"))
    p.set_defaults(handler=lambda args, ctx: parser.parse_args([*args.topic, "--help"]) and 0)


class VersionAction(argparse.Action):
    """``--version``, looked up when asked for rather than each time the parser is built."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help=None):
        help = help or _("show program's version number and exit")
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog} {version()}")
        parser.exit()


class _Unsure(Exception):
    pass


class _QuietParser(argparse.ArgumentParser):
    """Finds the command only; any error is left for the real parser to report."""

    def error(self, message):
        raise _Unsure(message)


def named_command(argv: list[str]) -> str | None:
    """The command an argument list names, found without building every command's parser;
    None when it names none (or asks for the top-level help), so every command is registered."""
    try:
        _known, rest = _QuietParser(add_help=False, parents=[common_parser()]).parse_known_args(argv)
    except _Unsure:
        return None
    for i, word in enumerate(rest):
        if not word.startswith("-"):
            return word if word in COMMANDS and not {"-h", "--help"} & set(rest[:i]) else None
    return None


def given_option(argv: list[str], name: str) -> str | None:
    """The value ``argv`` gives option ``name`` (``--lang fr`` or ``--lang=fr``, the last one wins),
    read before argparse so that a usage error elsewhere in the line is still told in the language."""
    found = None
    for i, word in enumerate(argv):
        if word == "--":
            break
        if word == name and i + 1 < len(argv):
            found = argv[i + 1]
        elif word.startswith(name + "="):
            found = word[len(name) + 1:]
    return found


def chosen_language(argv: list[str]) -> str:
    """This run's language (``i18n.choose``): ``--lang``, else the home's ``[console] language``, else
    the environment's; found before the parser is built, so its usage errors are in it too."""
    flag = given_option(argv, "--lang")
    configured = config = None
    if not flag:
        try:
            config = Home.resolve(given_option(argv, "--home")).config
            table = read_toml(config).get("console", {})
        except (ValueError, OSError):
            table = {}  # a config that does not load is reported, with its key, by whatever reads it
        configured = table.get("language") if isinstance(table, dict) else None
        if configured is not None and not isinstance(configured, str):
            raise i18n.UnknownLanguage(N_("%(config)s [console] language must be a language code in quotes, "
                                          "e.g. \"fr\", not %(given)s"), config=str(config), given=repr(configured))
    try:
        return i18n.choose(flag, configured, os.environ)
    except i18n.UnknownLanguage as exc:
        if flag:
            raise
        raise i18n.UnknownLanguage(N_("%(config)s [console] language: unknown language %(given)s; the shipped "
                                      "languages are %(shipped)s"), config=str(config), given=exc.values["given"],
                                   shipped=exc.values["shipped"]) from None


# argparse looks up its own words (console/argparse_words.py) through these at the moment it shows them.
argparse._ = i18n._
argparse.ngettext = i18n.ngettext


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser, or, when ``argv`` names a command, the parser with only that command's
    module registered (its handler and help are the same; only the other modules are not loaded)."""
    common = common_parser()
    parser = Parser(
        prog="ussd-console",
        description=_("Field frame receiver and operator console. Without a command, opens the console."),
        parents=[common],  # --json here too: `ussd-console --json status` works as well as after the command
        epilog=examples_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    command = named_command(argv) if argv is not None else None
    for name in [COMMANDS[command]] if command else MODULES:
        importlib.import_module(name).register(sub, common)
    add_help_command(sub, parser)
    return parser



def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    argv = sys.argv[1:] if argv is None else argv
    try:
        i18n.select(chosen_language(argv))
    except i18n.UnknownLanguage as exc:
        # Refused in the language the environment names (English where it names none we ship).
        i18n.select(i18n.choose(None, None, os.environ))
        print(_("ussd-console: error: %(reason)s", reason=said(exc)), file=sys.stderr)
        return EXIT_ERROR
    import_store_driver(argv)  # before anything imports peewee
    import peewee

    from core import RetentionError, StoreError

    from .context import Context

    parser = build_parser(argv)
    args = parser.parse_args(argv)
    ctx = Context(
        home=Home.resolve(getattr(args, "home", None)),
        json=getattr(args, "json", False),
        db=getattr(args, "db", None),
        writes=getattr(args, "writes", False) or getattr(args, "handler", None) is None,
    )
    handler = getattr(args, "handler", None)
    umask = private_umask()  # the home and all in it stay its user's, whatever umask the caller had
    try:
        code = default_command(args, ctx, parser) if handler is None else handler(args, ctx)
        try:
            sys.stdout.flush()  # a reader gone before the last lines were written is found here, not at exit
        except BrokenPipeError:
            stdout_closed()
        return code
    except StdoutClosed:
        return 0
    except (CommandError, StoreError, RetentionError, ValueError) as exc:  # a Said (CommandError.told) as it is
        print(_("ussd-console: error: %(reason)s", reason=said(exc)), file=sys.stderr)
        return EXIT_ERROR
    except (peewee.OperationalError, sqlite3.OperationalError) as exc:
        reason = one_line(exc)
        if "locked" in reason or "busy" in reason:
            reason = _("the store %(store)s is locked by another process for too long (%(reason)s)",
                       store=ctx.store_label, reason=reason)
        print(_("ussd-console: error: store: %(reason)s", reason=reason), file=sys.stderr)
        return EXIT_ERROR
    except (peewee.DatabaseError, sqlite3.DatabaseError) as exc:
        print(_("ussd-console: error: store %(store)s: %(reason)s", store=ctx.store_label, reason=one_line(exc)),
              file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        # filename is whatever the failing call was given: a path, or a bare descriptor number.
        name = exc.filename
        if isinstance(name, (str, bytes, os.PathLike)):
            name = os.fsdecode(name)
        where = escape_text(str(name), 300) if name is not None else ""
        print(f"ussd-console: error: {exc.strerror or one_line(exc)}: {where}".rstrip(": "), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(_("ussd-console: interrupted"), file=sys.stderr)
        return 130
    finally:
        ctx.close()
        os.umask(umask)  # a caller in the same process (a test, a wrapper) gets its own back


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
