"""``ussd-console alerts``: the alert outbox, a test event to every target, and ``alerts resume``
(signed by an admin) for a home whose alert targets are paused since it was restored."""

from __future__ import annotations

import shlex
import time

from rich.text import Text

from console.errors import CommandError
from console.render import assembled, make_console, print_json, safe, table, when
from core.i18n import _
from core.alerts import SendError, load_alerts_config, pause, send
from core.rules import events
from core.rules.text import said
from core.store import outbox
from core.urls import mask_url

from .common import add_paging, with_examples

EXIT_SOME_FAILED = 1


def register(sub, common) -> None:
    from .signing import signing_parser

    p = sub.add_parser("alerts", parents=[common, signing_parser()],
                       help=_("the alert outbox (settings: <home>/config.toml [alerts]); `alerts test` sends a test event"),
                       **with_examples("ussd-console alerts", "ussd-console alerts --state failed", "ussd-console alerts test",
                                       "ussd-console alerts resume --operator alice --reason 'checked [alerts] after the restore'"))
    p.add_argument("action", nargs="?", choices=["list", "test", "resume"], default="list",
                   help=_("list (default); test: send one test event to every target now; resume (signed, an admin): "
                          "deliver again on a home restored from a backup"))
    p.add_argument("--state", choices=outbox.STATES, help=_("only deliveries in this state"))
    add_paging(p, offset=False)
    p.set_defaults(handler=cmd_alerts)


def cmd_alerts(args, ctx) -> int:
    if args.action == "resume":
        return _resume(args, ctx)
    if args.action == "test":
        return _test(ctx)
    if args.limit < 1:
        raise CommandError.told(_("--limit must be at least 1"))
    rows = outbox.listing(ctx.receiver.db, state=args.state, limit=args.limit)
    if ctx.json:
        for row in rows:
            print_json(row)
        return 0
    title = (_("Alerts (%(state)s), newest first", state=args.state) if args.state
             else _("Alerts, newest first"))
    event, kind, state, tries, next_try = _("event"), _("kind"), _("state"), _("tries"), _("next try")
    columns = [event, kind, _("at"), _("target"), state, tries, next_try, _("summary / last error")]
    make_console().print(table(title, columns, [
        (r["event_id"][:12], r["kind"], when(r["at"]), r["target"] or Text(_("(none yet)")), r["state"],
         r["attempts"], when(r["next_at"]), safe(r["summary"], 300) if r["state"] != "failed" else
         assembled(_("%(summary)s | last error: %(error)s"), summary=safe(r["summary"], 300),
                   error=safe(r["last_error"], 300)))
        for r in rows
    ], codes=(event, kind, state, tries), drop=(next_try, tries, event)))
    return 0


def _resume(args, ctx) -> int:
    from core.alerts.resume import RESUME, remove_marker

    from .signing import run_signed

    if pause.paused(ctx.home, ctx.receiver.db) is None:
        raise CommandError.told(_("the alert targets of this home are not paused; nothing to sign"))
    return run_signed(ctx, args, RESUME, {"home": ctx.home},
                      done=lambda result: _resumed(ctx, remove_marker(ctx.home, result)))


def _resumed(ctx, result: dict) -> int:
    name = result["entry"]["operator"]
    entry = result["entry"]
    if ctx.json:
        print_json({"resumed": True, "audit_seq": entry["seq"], "operator": entry["operator"],
                    "targets": result["targets"]})
    else:
        out = make_console()
        out.print(Text(_("alerts resumed (signed audit entry #%(seq)s by %(operator)s); pending alerts go out to "
                         "the targets in config.toml from now on", seq=entry["seq"], operator=name)), soft_wrap=True)
    if result.get("marker_left"):
        make_console(stderr=True).print(assembled(_("note: could not remove the pause marker (the signed resume "
                                                    "stands): %(reason)s"), reason=safe(result["marker_left"], 300)),
                                        soft_wrap=True)
    return 0


def _test(ctx) -> int:
    marker = pause.paused(ctx.home)  # a restored home has its store: the log says whether it was resumed
    if marker is not None and pause.paused(ctx.home, ctx.receiver.db) is not None:
        raise CommandError(pause.words(marker))
    config = load_alerts_config(ctx.home.config)
    if not config.targets:
        raise CommandError.told(_("no alert target in %(config)s [alerts] (set command and/or url)"),
                                config=ctx.home.config)
    event = events.test(str(ctx.home.root))
    now = time.time()
    payload = {"event_id": f"test-{int(now)}", "kind": event.kind, "at": now, "summary": event.summary,
               "details": event.details}
    results, told = {}, {}  # told: each failure in the operator's language; --json keeps the English
    for target in sorted(config.targets):
        started = time.monotonic()
        try:
            send(target, config, payload)
            results[target] = {"delivered": True, "error": None}
        except SendError as exc:
            results[target] = {"delivered": False, "error": str(exc)}
            told[target] = said(exc)
        results[target]["seconds"] = round(time.monotonic() - started, 3)
    if ctx.json:
        print_json({"event": payload, "targets": results})
    else:
        out = make_console()
        for target, r in results.items():
            where = shlex.join(config.command) if target == "command" else mask_url(config.url)
            verdict = (Text(_("delivered")) if r["delivered"]
                       else assembled(_("FAILED: %(error)s"), error=safe(told[target], 600)))
            out.print(assembled(_("%(target)s (%(where)s): %(verdict)s"), target=target, where=safe(where, 120),
                                verdict=verdict))
    return 0 if all(r["delivered"] for r in results.values()) else EXIT_SOME_FAILED
