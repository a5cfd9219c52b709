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
from core.i18n import _, ngettext, number
from core.home import PrivateFileError, read_private
from core.rules.text import said
from core.signing import audit, signed_action
from core.signing.keys import ActionError, check_name
from core.signing.operators import load_signer

from .common import minute


def signing_parser() -> argparse.ArgumentParser:
    signing = argparse.ArgumentParser(add_help=False)
    signing.add_argument("--operator", metavar="NAME", help=_("who signs"))
    signing.add_argument("--reason", metavar="TEXT", help=_("why (required, free text, one line)"))
    signing.add_argument("--passphrase-file", metavar="PATH",
                         help=_("read the passphrase from the first line of PATH instead of asking"))
    return signing


# -- passphrases ------------------------------------------------------------------
def read_passphrase_file(path: str) -> str:
    """The first line of a passphrase file only its owner can read, under the checks a key file
    gets (``core.home.read_private``); a named pipe a script writes into is taken too."""
    try:
        data = read_private(path, "the passphrase file", pipe=True)
    except PrivateFileError as exc:
        raise CommandError.told(said(exc)) from None
    try:
        line = re.split(rb"\r\n|\r|\n", data, maxsplit=1)[0].decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError.told(_("the passphrase file %(path)s is not UTF-8 text"), path=path) from None
    if not line:
        raise CommandError.told(_("the passphrase file %(path)s has an empty first line"), path=path)
    return line


def ask(prompt: str) -> str:
    """Ask without echo, or refuse: a passphrase is never read where it would show."""
    if not sys.stdin.isatty():
        raise CommandError.told(_("no terminal to ask for the passphrase on; use --passphrase-file PATH"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", getpass.GetPassWarning)
        try:
            return getpass.getpass(prompt)
        except getpass.GetPassWarning:
            raise CommandError.told(_("cannot turn echo off to ask for the passphrase; use --passphrase-file PATH")) from None
        except EOFError:
            raise CommandError.told(_("no passphrase given")) from None


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
        secret = ask(prompt or _("passphrase for %(name)s: ", name=name))
        try:
            return load_signer(ctx.home, ctx.receiver, name, secret)
        except ActionError as exc:
            if not str(exc).startswith("wrong passphrase"):
                raise
            if attempt == UNLOCK_TRIES:
                raise CommandError.told(_("%(reason)s; %(tries)s, nothing was signed"), ours={
                    "reason": said(exc),
                    "tries": ngettext("%(n)s try", "%(n)s tries", UNLOCK_TRIES, n=number(UNLOCK_TRIES))}) from None
            left = UNLOCK_TRIES - attempt
            print(ngettext("%(reason)s; try again (%(n)s try left)", "%(reason)s; try again (%(n)s tries left)", left,
                           reason=said(exc), n=number(left)), file=sys.stderr, flush=True)
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def signer_name(args) -> str:
    if not args.operator:
        raise CommandError.told(_("name the signing operator with --operator NAME"))
    return check_name(args.operator)


def signing_reason(args) -> str:
    if args.reason is None:
        raise CommandError.told(_("give the reason with --reason TEXT (required for every signed action)"))
    return audit.check_reason(args.reason)


# -- printing ------------------------------------------------------------------------
def print_pending(ctx, result: dict, *more: str) -> int:
    """A signed request held for a second admin ([signing] countersign): its id, and how to decide it."""
    if ctx.json:
        print_json(result)
        return 0
    rid, entry = result["pending"], result["entry"]
    out = make_console()
    approve = f"`ussd-console approve {rid}`"
    out.print(Text(_("waiting for a second admin: request %(id)s (%(action)s %(target)s); nothing is applied "
                     "until another admin runs %(command)s", id=rid, action=result["action"], target=result["target"],
                     command=approve)), soft_wrap=True)
    out.print(Text(_("it expires at %(time)s; %(command)s lists what waits", time=minute(result["expires_at"]),
                     command="`ussd-console pending`")), soft_wrap=True)
    for line in more:
        out.print(Text(line), soft_wrap=True)
    out.print(Text(entry_words(entry)), soft_wrap=True)
    return 0


def entry_words(entry: dict) -> str:
    """The signed entry a command wrote, and the log's head after it."""
    return _("signed audit entry #%(seq)s by %(operator)s; head %(hash)s", seq=entry["seq"],
             operator=entry["operator"], hash=entry["hash"])


def show_preview(ctx, preview) -> None:
    if ctx.json:
        return
    out = make_console()
    out.print(Text(_("About to sign:"), style="bold"))
    for line in preview.lines:
        out.print(Text("  ") + safe(line, 600), soft_wrap=True)


def print_signed(ctx, result: dict, summary: str) -> int:
    entry = result["entry"]
    if ctx.json:
        print_json(result)
        return 0
    out = make_console()
    out.print(Text(summary), soft_wrap=True)
    out.print(Text(entry_words(entry)), soft_wrap=True)
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
