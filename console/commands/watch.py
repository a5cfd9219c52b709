"""``ussd-console watch``: the receiver without the console, for a server or a service manager.

Runs both inbox paths (watchdog push, sweep pull), alert delivery and the
hourly eviction, logs to ``<home>/logs/receiver.log`` (rotated, ``[logs]``) and
stderr, tells systemd how it is and writes the metrics file
(``core.ops.supervise``), and stops cleanly on SIGINT or SIGTERM: a file being
read stays claimed at its last commit and is resumed by the next start, so a
stop loses nothing and counts nothing twice.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time

from core.i18n import _
from core.alerts import load_alerts_config
from core.backup.config import load_backup_config
from core.backup.schedule import BackupSchedule
from core.report.config import load_report_config
from core.report.schedule import ReportSchedule
from core.config import load_inbox_config, load_log_config
from core.home import LOG_FORMAT
from core.inbox import InboxService, prepare_home
from core.inbox.faults import OUT_OF_FILES
from core.ops.logfile import RotatingLog
from core.ops.sd_notify import Notifier
from core.ops.supervise import Supervision
from core.inbox.writers import ignore_lease_breaks
from core.gateways.config import load_gateways_config
from core.rules.retention import EVICT_EVERY_SECONDS, EvictionSchedule
from core.rules.text import one_line

from .common import with_examples

log = logging.getLogger("ussd.watch")


def register(sub, common) -> None:
    p = sub.add_parser(
        "watch", parents=[common],
        help=_("headless receiver: watch and sweep the inbox, evict hourly (settings: <home>/config.toml [inbox])"),
        **with_examples("ussd-console --home /srv/ussd watch", "ussd-console watch --no-observer --sweep-interval 10",
                        "ussd-console watch --listen 127.0.0.1:8567"),
    )
    p.add_argument("--sweep-interval", type=float, metavar="S", help=_("seconds between sweeps (default 3)"))
    p.add_argument("--settle-time", type=float, metavar="S",
                   help=_("seconds a file written in place must be unchanged before it is taken (default 1)"))
    p.add_argument("--max-file-bytes", type=int, metavar="N", help=_("larger files go to rejected/ (default 64 MiB)"))
    p.add_argument("--keep-originals", action="store_true", default=None,
                   help=_("archive files as they came, phone-number columns included"))
    p.add_argument("--evict-every", type=float, metavar="S",
                   help=_("seconds between scheduled evictions (default %(seconds)s)", seconds=EVICT_EVERY_SECONDS))
    p.add_argument("--batch-lines", type=int, metavar="N", help=_("frames per transaction (default 5000)"))
    p.add_argument("--no-observer", dest="observer", action="store_false", default=None,
                   help=_("no watchdog observer: the sweep alone delivers (e.g. on a network share)"))
    p.add_argument("--no-sweep", dest="sweep", action="store_false", default=None,
                   help=_("no periodic sweep (claimed files are still resumed at start)"))
    p.add_argument("--listen", metavar="HOST:PORT",
                   help=_("also take gateways' posts over HTTP on this address (see %(command)s; [gateways] listen)",
                          command="`gateway add`"))
    p.set_defaults(handler=cmd_watch, writes=True)


def _overrides(args) -> dict:
    keys = ("sweep_interval", "settle_time", "max_file_bytes", "keep_originals", "evict_every", "batch_lines",
            "observer", "sweep")
    return {k: getattr(args, k, None) for k in keys}


class _OneLineFormatter(logging.Formatter):
    """For the operator's terminal: the message without a traceback (the log file keeps it)."""

    def format(self, record: logging.LogRecord) -> str:
        saved = record.exc_info, record.exc_text, record.stack_info
        record.exc_info = record.exc_text = record.stack_info = None
        try:
            return super().format(record)
        finally:
            record.exc_info, record.exc_text, record.stack_info = saved


def _setup_logging(home, logs) -> list[logging.Handler]:
    """INFO and up from every ``ussd.*`` logger to the home's log file and to stderr (one line each)."""
    to_file = RotatingLog(home.log_file, logs.max_bytes, logs.backups)
    to_file.setFormatter(logging.Formatter(LOG_FORMAT))
    to_stderr = logging.StreamHandler(sys.stderr)
    to_stderr.setFormatter(_OneLineFormatter(LOG_FORMAT))
    handlers: list[logging.Handler] = [to_file, to_stderr]
    root = logging.getLogger("ussd")
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    root.propagate = False  # the command line's own stderr handler would print every line twice
    return handlers


def _teardown_logging(handlers: list[logging.Handler]) -> None:
    root = logging.getLogger("ussd")
    for handler in handlers:
        root.removeHandler(handler)
        handler.close()
    root.propagate = True


def _alert_conflicts(verdicts, result) -> None:
    for v in verdicts:
        if v.alert:
            log.warning("CONFLICT needs an operator: %s (%s) in %s line %s", v.frame_id, v.reason, result.name, v.line)


@contextlib.contextmanager
def out_of_files_is_a_fault(faults):
    """The open-file limit met by the health figures or the backup schedule: a fault in force until a
    tick works again, never the end of ``watch``."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in OUT_OF_FILES:
            raise
        faults.report("watch", f"watch: out of open files ({exc.strerror}); health and backups wait")
    else:
        faults.clear("watch")


def cmd_watch(args, ctx) -> int:
    home = ctx.open_home()
    config = load_inbox_config(home.config, _overrides(args))  # a bad value stops here, before anything runs
    alerts = load_alerts_config(home.config)
    gateways = load_gateways_config(home.config, getattr(args, "listen", None))  # None: no listener
    logs = load_log_config(home.config)
    backup = load_backup_config(home.config)
    report = load_report_config(home.config)
    prepare_home(home)
    handlers = _setup_logging(home, logs)
    stop = threading.Event()
    notifier = Notifier()

    def on_signal(signum, _frame):
        log.info("%s received; stopping", signal.Signals(signum).name)
        notifier.stopping()
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    ignore_lease_breaks()
    service = InboxService(home, store_target=ctx.store_target, config=config, on_verdicts=_alert_conflicts,
                           role="watch", alerts=alerts)
    started = False
    listener = None
    schedules = []
    try:
        service.start()
        started = True
        if gateways is not None:  # the gateways' HTTP path (core.gateways.listener)
            from core.gateways.listener import start_listener

            listener = start_listener(home, service.store_target, gateways, faults=service.faults)
        log.info("watching %s; Ctrl-C or SIGTERM stops", home.inbox)
        schedule = EvictionSchedule(config.evict_every, time.monotonic())
        supervision = Supervision(home, service, notifier, sorted(alerts.targets))
        backups = BackupSchedule.for_service(home, ctx.store_target, service, backup)
        reports = ReportSchedule.for_service(home, ctx.store_target, service, sorted(alerts.targets), report)
        schedules = [reports]
        while not stop.is_set():
            with out_of_files_is_a_fault(service.faults):
                supervision.tick()
                backups.tick()
                reports.tick()
            if schedule.due(time.monotonic()):
                try:
                    removed = service.receiver.evict(started_by="schedule")
                    log.info("scheduled eviction run: %d dedup rows removed", removed)
                except Exception as exc:  # noqa: BLE001 - a locked store now is retried next time
                    log.warning("scheduled eviction failed: %s", one_line(exc))
            stop.wait(min(1.0, schedule.wait(time.monotonic())))
    finally:
        if not stop.is_set():
            notifier.stopping()  # stopping for another reason than a signal (a failed start)
        if listener is not None:
            listener.stop()  # before the inbox: every post waiting is answered first
        # A report being written is finished, not cut off under matplotlib as the interpreter ends
        # (it takes seconds). A backup is not waited for: it may be held on a slow disk, and a cut
        # one leaves only a temporary file, never one that passes for a backup.
        for running in schedules:
            if not running.finish(timeout=30.0):
                log.warning("stopped while a scheduled report was still being written")
        clean = service.stop(timeout=10.0)
        if started:  # a start that failed says why in the one error line, and nothing else
            log.info("stopped%s", "" if clean else " (a file was still being read; it resumes at the next start)")
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _teardown_logging(handlers)
    return 0
