"""Which retention policy is in force: only a signed one, and never one below the floor (R7, docs/rules.md#operators-and-signatures).

A policy row is applied only when it is at least 72 hours and the audit entry it
names is a ``retention.set`` entry for exactly that row, signed by the key of
the operator it names. A row that fails (typed in by hand, below the floor, an
old signed entry replayed) is never applied: the newest valid row before it
is, or the default, and the policy comes with a *fault* the operator sees.

This checks one signature per policy row, so it is cheap enough for every
eviction and every status line; the whole log is `audit verify`'s work.
"""

from __future__ import annotations

import json

from .audit_models import audit_models
from .keys import verify_signature
from core.i18n import N_, _, ngettext
from core.rules.retention import DEFAULT_SECONDS, FLOOR_SECONDS, period
from core.rules.text import Twofold, english_ngettext, escape_text, said_values, worded


RETENTION_SET = "retention.set"
REQUEST, APPROVE = "countersign.request", "countersign.approve"  # held.REQUEST, held.APPROVE
ROWS_CHECKED = 200  # newest policy rows looked at; rows are one per signed change


def _entry(receiver, seq):
    from .audit import _columns, _Row

    db = receiver.db
    found = db.execute_sql(f"SELECT {_columns(db)} FROM audit_log WHERE seq = {db.param}", (int(seq),)).fetchone()
    return None if found is None else _Row(*found)


def _signed(receiver, entry) -> bool:
    """Whether an entry is signed by the registered key of the operator it names, unedited."""
    from .audit import _fields_of, entry_hash, message

    try:
        msg = message(_fields_of(entry))
    except (TypeError, ValueError, OverflowError, UnicodeEncodeError):
        return False
    O = audit_models(receiver.db).Operator
    key = O.get_or_none((O.fingerprint == entry.key) & (O.name == entry.operator))
    return key is not None and verify_signature(key.public_key, entry.signature, msg) \
        and entry_hash(msg, entry.signature) == entry.hash


def _what_it_set(receiver, entry) -> tuple[dict, str] | None:
    """The retention payload an entry set and who set it: a ``retention.set`` entry, or the
    approval of a held ``retention.set`` request (set by its requester, when approved)."""
    try:
        payload = json.loads(entry.payload)
    except (TypeError, ValueError):
        return None
    if not isinstance(payload, dict):
        return None
    if entry.action == RETENTION_SET:
        return payload, entry.operator
    if entry.action != APPROVE or isinstance(payload.get("request"), bool) or not isinstance(payload.get("request"), int):
        return None
    request = _entry(receiver, payload["request"])
    if request is None or request.action != REQUEST or request.hash != payload.get("request_hash") \
            or not _signed(receiver, request):
        return None
    try:
        held = json.loads(request.payload)
    except (TypeError, ValueError):
        return None
    if not isinstance(held, dict) or held.get("action") != RETENTION_SET or not isinstance(held.get("payload"), dict):
        return None
    return held["payload"], request.operator


def _problem(receiver, row: dict) -> str | None:
    """Why a policy row must not be applied, or None."""
    seconds = row["retention_seconds"]
    if not isinstance(seconds, int) or seconds < FLOOR_SECONDS:
        return worded(N_("it is below the 72-hour floor"))
    if row["audit_id"] is None:
        return worded(N_("it has no signed audit entry"))
    entry = _entry(receiver, row["audit_id"])
    if entry is None:
        return worded(N_("its audit entry #%(entry)s is not in the log"), entry=row["audit_id"])
    found = _what_it_set(receiver, entry)
    if found is None:
        return worded(N_("audit entry #%(entry)s did not set this policy"), entry=row["audit_id"])
    payload, by = found
    if (payload.get("to_seconds") != seconds or by != row["set_by"] or entry.at != row["set_at"]
            or bool(payload.get("exception")) != bool(row["is_exception"])):
        return worded(N_("audit entry #%(entry)s did not set this policy"), entry=row["audit_id"])
    if not _signed(receiver, entry):
        return worded(N_("audit entry #%(entry)s is not signed by %(operator)s"), entry=row["audit_id"],
                       operator=escape_text(entry.operator, 24))
    return None


def _seconds(value) -> str:
    return period(value) if isinstance(value, int) and value > 0 else escape_text(value, 20)


def policy_in_force(receiver) -> dict:
    """The policy eviction applies, as plain data, with ``fault`` saying why a newer row was set aside."""
    P = receiver.m.Policy
    rows = list(P.select().order_by(P.id.desc()).limit(ROWS_CHECKED).dicts())
    faults = []
    used: dict[int, int] = {}  # audit id -> the oldest row naming it; a later row naming it is a replay
    for row in reversed(rows):
        used.setdefault(row["audit_id"], row["id"])
    for row in rows:
        problem = _problem(receiver, row)
        if problem is None and row["audit_id"] is not None and used.get(row["audit_id"]) != row["id"]:
            problem = worded(N_("it repeats audit entry #%(entry)s, which an older row already applied"),
                              entry=row["audit_id"])
        if problem is None:
            break
        faults.append(worded(N_("retention policy #%(id)s (%(period)s, set by %(by)s) is not applied: %(problem)s"),
                              id=row["id"], period=_seconds(row["retention_seconds"]),
                              by=escape_text(row["set_by"], 24), problem=problem))
    else:
        row = None
    if row is None:
        policy = {"retention_seconds": DEFAULT_SECONDS, "set_at": None, "set_by": "default",
                  "reason": "", "is_exception": False, "audit_id": None}
    else:
        policy = {k: v for k, v in row.items() if k != "id"}
    fault = None
    if faults:
        fault = _fault(faults, policy)
    return {**policy, "fault": fault}


def _fault(faults: list, policy: dict) -> Twofold:
    """The first row set aside, what eviction uses instead, how many more, and what to run."""
    values = {"first": faults[0], "period": period(policy["retention_seconds"]), "entry": policy["audit_id"],
              "n": len(faults) - 1, "command": "`ussd-console audit verify`"}
    if len(faults) == 1:
        message = (N_("%(first)s; eviction uses %(period)s (the last valid policy, entry #%(entry)s); run %(command)s")
                   if policy["audit_id"] else N_("%(first)s; eviction uses %(period)s (the default); run %(command)s"))
        return worded(message, **values)
    return Twofold(_more(values, english_ngettext), lambda: _more(said_values(values)))


def _more(values: dict, ngettext=ngettext) -> str:
    """The fault with more than one row set aside, in English (``ngettext=english_ngettext``) or the language."""
    if values["entry"]:
        return ngettext("%(first)s; eviction uses %(period)s (the last valid policy, entry #%(entry)s); "
                        "%(n)s more such row; run %(command)s",
                        "%(first)s; eviction uses %(period)s (the last valid policy, entry #%(entry)s); "
                        "%(n)s more such rows; run %(command)s", values["n"], **values)
    return ngettext("%(first)s; eviction uses %(period)s (the default); %(n)s more such row; run %(command)s",
                    "%(first)s; eviction uses %(period)s (the default); %(n)s more such rows; run %(command)s",
                    values["n"], **values)
