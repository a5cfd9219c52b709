"""The ``config.toml`` a new home starts with: every section and setting there is, commented out
with its default and a line on what it does, so a guide's "set ``[backup] every``" points at a
line that exists. Every line is a comment, so the file changes nothing until one is uncommented.

A setting whose default is "not set" is shown with an example value and says so. A test
uncomments every line, loads the result through each section's loader and checks each setting
against the loader's own key list and default, so this text cannot drift from the code.
"""

from __future__ import annotations

import os

TEMPLATE = """\
# This home's settings. Every setting is shown commented out, with its default; to change one,
# remove the "# " before it (and before its [section] line). A bad value stops the program at start
# with a line naming it. The guide for each section is docs/admin.md.

# db = "receiver.db"                # the store: a SQLite file in this home, or a postgresql:// URL

# [inbox]                           # the inbox folder a gateway drops files into
# sweep_interval = 3.0              # seconds between sweeps of the inbox (the pull path)
# settle_time = 1.0                 # seconds a file written in place must be unchanged before it is taken
# max_file_bytes = 67108864         # larger files go to rejected/ unread (64 MiB)
# keep_originals = false            # true: processed/ keeps the file as it came, phone columns included
# evict_every = 3600.0              # seconds between scheduled evictions in `ussd-console watch`
# observer = true                   # the file-watch push path; false leaves only the sweep
# sweep = true                      # the sweep pull path; false leaves only the observer
# batch_lines = 100000              # frames per transaction (a crash redoes at most one batch)
# id_columns = []                   # this site's frame id column(s), on top of frame_id, frameid, frame_key
# text_columns = []                 # this site's frame text column(s), on top of text, message, body ...
# phone_columns = []                # more columns that hold phone numbers (never read, dropped from copies)

# [console]                         # the operator console
# unlock_minutes = 15.0             # an unlocked signing key locks after this long without a signature (0: always ask)
# language = "fr"                   # not set by default: LANGUAGE, LC_ALL, LC_MESSAGES or LANG, else English (en, es, fr, pt, sw)

# [console.keys]                    # action id = key(s), to move a console key; docs/operator.md lists the ids
# quit = "q"                        # for example: the key that asks to quit

# [signing]                         # signed operator actions (docs/roles.md)
# countersign = []                  # kinds that wait for a second admin: "retention", "gateway", "operator"
# countersign_hours = 72.0          # a request held for a second admin expires after this long

# [logs]                            # logs/receiver.log
# max_bytes = 10485760              # the log rotates at this size (10 MiB); 0 never rotates (an outside logrotate)
# backups = 5                       # rotated logs kept (receiver.log.1 ...)

# [backup]                          # backups (docs/backups.md)
# dir = "/media/usb/ussd"           # not set by default: backups go to backups/ in this home
# every = 21600.0                   # not set by default: watch makes no scheduled backups; here every 6 hours
# keep = 14                         # backups kept in the folder; older ones go after a new one verified
# recipients = []                   # age public keys ("age1...") backups are encrypted to; none: not encrypted

# [report]                          # the situation report `watch` writes (docs/admin.md, situation reports)
# every = "1d"                      # not set by default: watch writes no scheduled reports; here once a day ("12h", "7d")
# at = "07:00"                      # not set by default: every `every` from the last report; here each day at 07:00
# dir = "/srv/ussd-reports"         # not set by default: reports go to reports/ in this home
# keep = 30                         # reports kept in the folder (an HTML and a PDF each); older ones go

# [gateways]                        # gateways posting to `watch` (docs/gateways/README.md)
# listen = "127.0.0.1:8580"         # not set by default: watch does not listen; HOST:PORT, or a port on loopback
# tls_cert = "tls/cert.pem"         # not set by default: plain HTTP; with tls_key, HTTPS (a path in this home)
# tls_key = "tls/key.pem"           # not set by default: goes with tls_cert
# rate = 5000.0                     # posts a second each gateway may make before it is answered 429
# burst = 10000.0                   # posts a gateway may send at once above the rate (default: twice rate)
# max_connections = 512             # connections held at once; more are closed at accept (fits LimitNOFILE=1024)
# max_connections_per_peer = 64     # connections held at once from one address (an IPv6 /64)
# header_timeout = 5.0              # seconds for a TLS handshake, and again for a request's headers
# body_timeout = 30.0               # seconds for a body of up to 64 KiB; a slower one is answered 408

# [alerts]                          # where events go (docs/admin.md, alerts)
# command = "/usr/local/bin/notify-team"  # not set by default: run without a shell, one event as JSON on stdin
# url = "http://127.0.0.1:9000/hooks/ussd"  # not set by default: each event is POSTed there as JSON
# token_file = "alert-token"        # not set by default: its first line is sent as "Authorization: Bearer ..."
# headers = { "X-Hook-Secret" = "change-me" }  # not set by default: more headers for the url target
# events = ["conflict", "file_rejected", "fault", "fault_cleared", "checkpoint", "report"]  # the kinds sent
# timeout = 10.0                    # seconds a target may take before the attempt counts as failed
# retry_first = 2.0                 # seconds before the first retry; each next one waits twice as long...
# retry_cap = 300.0                 # ...up to this
# fault_after = 300.0               # a target failing this long is a fault the console and status show
# keep_delivered_days = 30.0        # events every target had delivered longer ago than this are pruned
# pending_fault = 1000.0            # a target owing more alerts than this is one fault until it catches up

# [serve]                           # `ussd-console serve`: the console in a browser
# max_sessions = 3                  # consoles open at once; one more is answered 503
"""


def write_new_config(path) -> bool:
    """Write the template at ``path`` unless a file is there already (never replaced); mode 0600,
    as everything the receiver writes in its home. True when it was written."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(TEMPLATE)
    return True
