"""The command line's one way to sign: preview, unlock, sign, print (``run_signed``).

Every signing command takes ``--operator``, ``--reason`` and ``--passphrase-file``
(``signing_parser``), prints exactly what will be signed, asks for the passphrase
(never echoed; ``--passphrase-file`` for scripts), then signs and applies in one
transaction (``core.signing.signed_action.sign``) and prints what it did, or the
request it made when a second admin must approve it.
"""

from __future__ import annotations

import argparse
import getpass
import re
import sys
import warnings
from typing import Callable

from rich.text import Text

from console.errors import CommandError
from console.render import make_console, print_json, safe
from core.home import PrivateFileError, read_private
from core.signing import audit, signed_action
from core.signing.keys import ActionError, check_name
from core.signing.operators import load_signer

from .common import minute


def signing_parser() -> argparse.ArgumentParser:
    signing = argparse.ArgumentParser(add_help=False)
    signing.add_argument("--operator", metavar="NAME", help="who signs")
    signing.add_argument("--reason", metavar="TEXT", help="why (required, free text, one line)")
    signing.add_argument("--passphrase-file", metavar="PATH",
                         help="read the passphrase from the first line of PATH instead of asking")
    return signing


# -- passphrases ------------------------------------------------------------------
def read_passphrase_file(path: str) -> str:
    """The first line of a passphrase file only its owner can read, under the checks a key file
    gets (``core.home.read_private``); a named pipe a script writes into is taken too."""
    try:
        data = read_private(path, "the passphrase file", pipe=True)
    except PrivateFileError as exc:
        raise CommandError(str(exc)) from None
    try:
        line = re.split(rb"\r\n|\r|\n", data, maxsplit=1)[0].decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"the passphrase file {path} is not UTF-8 text") from None
    if not line:
        raise CommandError(f"the passphrase file {path} has an empty first line")
    return line


def ask(prompt: str) -> str:
    """Ask without echo, or refuse: a passphrase is never read where it would show."""
    if not sys.stdin.isatty():
        raise CommandError("no terminal to ask for the passphrase on; use --passphrase-file PATH")
    with warnings.catch_warnings():
        warnings.simplefilter("error", getpass.GetPassWarning)
        try:
            return getpass.getpass(prompt)
        except getpass.GetPassWarning:
            raise CommandError("cannot turn echo off to ask for the passphrase; use --passphrase-file PATH") from None
        except EOFError:
            raise CommandError("no passphrase given") from None


UNLOCK_TRIES = 3  # a passphrase mistyped at the prompt is asked again, this many times in all


def unlock(ctx, args, name: str, passphrase_file: str | None = None, prompt: str | None = None):
    """The operator's key, unlocked: with ``--passphrase-file`` once, at the terminal up to three tries.

    Each wrong try is a failed unlock like any other (``load_signer``: logged in the home's
    log, counted towards the growing wait); only a wrong passphrase is asked again, never
    a missing operator or key file.
    """
    path = passphrase_file if passphrase_file is not None else args.passphrase_file
    if path:
        return load_signer(ctx.home, ctx.receiver, name, read_passphrase_file(path))
    for attempt in range(1, UNLOCK_TRIES + 1):
        secret = ask(prompt or f"passphrase for {name}: ")
        try:
            return load_signer(ctx.home, ctx.receiver, name, secret)
        except ActionError as exc:
            if not str(exc).startswith("wrong passphrase"):
                raise
            if attempt == UNLOCK_TRIES:
                raise CommandError(f"{exc}; {UNLOCK_TRIES} tries, nothing was signed") from None
            left = UNLOCK_TRIES - attempt
            print(f"{exc}; try again ({left} {'try' if left == 1 else 'tries'} left)", file=sys.stderr, flush=True)
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def signer_name(args) -> str:
    if not args.operator:
        raise CommandError("name the signing operator with --operator NAME")
    return check_name(args.operator)


def signing_reason(args) -> str:
    if args.reason is None:
        raise CommandError("give the reason with --reason TEXT (required for every signed action)")
    return audit.check_reason(args.reason)


# -- printing ------------------------------------------------------------------------
def print_pending(ctx, result: dict, *more: str) -> int:
    """A signed request held for a second admin ([signing] countersign): its id, and how to decide it."""
    if ctx.json:
        print_json(result)
        return 0
    rid, entry = result["pending"], result["entry"]
    out = make_console()
    out.print(Text(f"waiting for a second admin: request {rid} ({result['action']} {result['target']}); "
                   f"nothing is applied until another admin runs `ussd-console approve {rid}`"), soft_wrap=True)
    out.print(Text(f"it expires at {minute(result['expires_at'])}; `ussd-console pending` lists what waits"),
              soft_wrap=True)
    for line in more:
        out.print(Text(line), soft_wrap=True)
    out.print(Text(f"signed audit entry #{entry['seq']} by {entry['operator']}; head {entry['hash']}"), soft_wrap=True)
    return 0


def show_preview(ctx, preview) -> None:
    if ctx.json:
        return
    out = make_console()
    out.print(Text("About to sign:", style="bold"))
    for line in preview.lines:
        out.print(Text("  ") + safe(line, 600), soft_wrap=True)


def print_signed(ctx, result: dict, summary: str) -> int:
    entry = result["entry"]
    if ctx.json:
        print_json(result)
        return 0
    out = make_console()
    out.print(Text(summary), soft_wrap=True)
    out.print(Text(f"signed audit entry #{entry['seq']} by {entry['operator']}; head {entry['hash']}"), soft_wrap=True)
    return 0


def run_signed(ctx, args, action: signed_action.SignedAction, action_args: dict, *,
               done: Callable[[dict], int] | None = None) -> int:
    """Preview ``action`` with ``action_args``, unlock the ``--operator``'s key, sign exactly that
    preview and print the result: ``done(result)`` when given, else the action's summary (or
    the request held for a second admin)."""
    name, reason = signer_name(args), signing_reason(args)
    preview = signed_action.preview(ctx.receiver, action, action_args, name, reason)
    show_preview(ctx, preview)
    result = signed_action.sign(ctx.home, ctx.receiver, action, action_args, operator=name,
                                signer=unlock(ctx, args, name), reason=reason, expected=preview)
    if done is not None:
        return done(result)
    if "pending" in result:
        return print_pending(ctx, result)
    return print_signed(ctx, result, action.summary(result))
