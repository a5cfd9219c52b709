"""Reconciling the tables with the signed log (docs/rules.md#operators-and-signatures).

A valid chain proves what the operators signed; it says nothing of a row
changed by hand beside it. `audit verify` therefore replays the verified
entries against the tables: every row of the signed state (a resolved
conflict, an accepted correction and the case history it left, a settled
version, a retention policy row, an operator row) must be the effect of a
signed entry, and every entry's effect must be there. Each difference is
named by table and row.

One *part* per kind of signed state: the entry actions it replays, and a check
that compares those entries with its tables. A new kind of signed action
plugs in with one ``register`` call (a case status mark registers its own
part beside these), and verify runs it with the others.
"""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple

from core.rules.frame import Frame, parse
from core.rules.text import escape_text

from .gateway_check import GATEWAY_ADD, GATEWAY_RETIRE, check_gateways
from .mark_check import MARK_ACTION, check_marks
from .registry import OPERATOR_ADD, OPERATOR_ADOPT, OPERATOR_RETIRE

RESOLVE_KEEP = "resolve.keep_first"
RESOLVE_ACCEPT = "resolve.accept_correction"
RETENTION_SET = "retention.set"
# Mirrors core.actions (which imports the store); kept here so verify does not need it.
STATUS = {"keep_first": "kept_first", "accept_correction": "accepted_correction"}
SETTLED = "settled"

Check = Callable[[object, list], Iterable[str]]


class Part(NamedTuple):
    name: str
    actions: tuple[str, ...]  # the entry actions this part replays
    check: Check  # (receiver, its entries in log order) -> one line per row that differs


PARTS: list[Part] = []


def register(name: str, actions: tuple[str, ...], check: Check) -> Check:
    """Add a part; verify replays every registered part, in registration order."""
    PARTS[:] = [p for p in PARTS if p.name != name] + [Part(name, tuple(actions), check)]
    return check


def reconcile(receiver, entries: list[dict]) -> list[str]:
    """Every row of the signed state that differs from the verified ``entries``, named."""
    out: list[str] = []
    for part in PARTS:
        mine = [e for e in entries if e["action"] in part.actions]
        out.extend(part.check(receiver, mine))
    return out


def _s(value, limit: int = 40) -> str:
    """A stored value quoted in a verdict: it may have been written by hand, so it is escaped."""
    return escape_text("none" if value is None else value, limit)


def _payloads(entries, needed: tuple[str, ...], out: list[str]):
    """Entries whose payload holds ``needed``; a signed but unreadable payload is named too."""
    for e in entries:
        p = e["payload"]
        if isinstance(p, dict) and all(k in p for k in needed):
            yield e, p
        else:
            out.append(f"audit entry #{e['seq']} ({e['action']}): its signed payload cannot be read")


def _differs(where: str, seq: int, pairs: Iterable[tuple[str, object, object]]) -> list[str]:
    return [f"{where}: {name} is {_s(found)}, entry #{seq} signed {_s(want)}"
            for name, found, want in pairs if found != want]


# -- resolved conflicts ---------------------------------------------------------------
def check_quarantine(receiver, entries) -> list[str]:
    out: list[str] = []
    expected: dict[int, tuple] = {}  # id -> (status, by, at, seq, newcomer text or None)
    for e, p in _payloads(entries, ("quarantine_id", "decision", "newcomer", "also_resolves"), out):
        for qid, status, text in [(p["quarantine_id"], STATUS.get(p["decision"]), p["newcomer"].get("frame_text")),
                                  *((q, SETTLED, None) for q in p["also_resolves"])]:
            if qid in expected:
                out.append(f"quarantine #{qid}: resolved by both entry #{expected[qid][3]} and entry #{e['seq']}")
            expected[qid] = (status, e["operator"], e["at"], e["seq"], text)
    Q = receiver.m.Quarantine
    found = Q.select(Q.id, Q.status, Q.resolved_by, Q.resolved_at, Q.frame_text).where(
        (Q.status != "open") | Q.resolved_by.is_null(False) | Q.resolved_at.is_null(False)
    ).order_by(Q.id).tuples()
    rows = {row[0]: row for row in found}
    for qid in sorted(set(expected) - set(rows)):
        row = Q.select(Q.id, Q.status, Q.resolved_by, Q.resolved_at, Q.frame_text).where(Q.id == qid).tuples().first()
        if row is None:
            out.append(f"quarantine #{qid}: missing, although entry #{expected[qid][3]} resolved it")
        else:
            rows[qid] = row
    for qid, status, by, at, text in sorted(rows.values()):
        want = expected.get(qid)
        if want is None:
            out.append(f"quarantine #{qid}: {_s(status)} by {_s(by)}, but no signed entry resolved it")
            continue
        pairs = [("status", status, want[0]), ("resolved_by", by, want[1]), ("resolved_at", at, want[2])]
        if want[4] is not None:
            pairs.append(("frame_text", text, want[4]))
        out.extend(_differs(f"quarantine #{qid}", want[3], pairs))
    return out


# -- the ledger: accepted corrections and the history they left ----------------------
LEDGER_FIELDS = ("frame_text", "seq", "site", "need", "headcount", "pri")
HISTORY_FIELDS = ("frame_id", "frame_text", "site", "need", "headcount", "pri")


def _frame_agrees(text, seq, site, need, headcount, pri) -> bool:
    parsed = parse("stored", text) if isinstance(text, str) else None
    return (isinstance(parsed, Frame) and parsed.trailer_ok
            and (parsed.seq, parsed.site, parsed.need, parsed.headcount, parsed.pri) == (seq, site, need, headcount, pri))


def _cases_off_their_frame(receiver) -> list[tuple]:
    """Cases whose columns are not the values of their own frame text (a value set by hand).

    The frame carries a checksum over its values, and every case holds the text
    it was applied (or corrected) from, so this holds for every case, signed or
    not. SQL finds the candidates on a big ledger; Python confirms each one.
    """
    def text(col):
        return f"CAST({col} AS TEXT)"

    rebuilt = " || ".join(["'H1|'", text("seq"), "'|'", "site", "'|'", "need", "'|'", text("headcount"), "'|'",
                           text("pri"), "'|#'", "substr(frame_text, length(frame_text) - 1)"])
    cursor = receiver.db.execute_sql(
        "SELECT id, frame_text, seq, site, need, headcount, pri FROM cases "
        f"WHERE frame_text IS NULL OR frame_text <> {rebuilt} OR {rebuilt} IS NULL ORDER BY id"
    )
    return [row for row in cursor.fetchall() if not _frame_agrees(*row[1:])]


def check_ledger(receiver, entries) -> list[str]:
    out: list[str] = []
    m = receiver.m
    by_case: dict[int, list] = {}
    by_quarantine: dict[int, tuple] = {}
    for e, p in _payloads(entries, ("case_id", "quarantine_id", "ledger", "newcomer"), out):
        if e["action"] != RESOLVE_ACCEPT:
            continue
        by_case.setdefault(p["case_id"], []).append((e, p))
        by_quarantine[p["quarantine_id"]] = (e, p)
    for row in _cases_off_their_frame(receiver):
        out.append(f"case #{row[0]}: its values ({', '.join(_s(v, 12) for v in row[2:])}) "
                   f"are not those of its frame {_s(row[1], 48)}")
    C = m.Case
    fields = [getattr(C, f) for f in ("id", "case_key", *LEDGER_FIELDS, "version", "updated_at")]
    changed = C.select(*fields).where((C.version != 1) | C.id.in_(list(by_case) or [0])).order_by(C.id).dicts()
    seen = set()
    for case in changed:
        seen.add(case["id"])
        corrections = by_case.get(case["id"])
        if not corrections:
            out.append(f"case #{case['id']}: version {_s(case['version'])}, but no signed entry corrected it")
            continue
        e, p = corrections[-1]
        pairs = [(f, case[f], p["newcomer"].get(f)) for f in LEDGER_FIELDS]
        pairs += [("case_key", case["case_key"], p.get("case_key")), ("version", case["version"], 1 + len(corrections)),
                  ("updated_at", case["updated_at"], e["at"])]
        out.extend(_differs(f"case #{case['id']}", e["seq"], pairs))
    for case_id in sorted(set(by_case) - seen):
        out.append(f"case #{case_id}: missing, although entry #{by_case[case_id][-1][0]['seq']} corrected it")
    H = m.CaseHistory
    for row in H.select().order_by(H.id).dicts():
        want = by_quarantine.pop(row["quarantine_id"], None)
        where = f"case history #{row['id']} (case #{row['case']})"
        if want is None:
            out.append(f"{where}: no signed correction replaced these values")
            continue
        e, p = want
        pairs = [(f, row[f], p["ledger"].get(f)) for f in HISTORY_FIELDS]
        pairs += [("case", row["case"], p["case_id"]), ("replaced_at", row["replaced_at"], e["at"])]
        out.extend(_differs(where, e["seq"], pairs))
    for qid, (e, p) in sorted(by_quarantine.items()):
        out.append(f"case #{p['case_id']}: the history row of entry #{e['seq']} (quarantine #{qid}) is missing")
    return out


def check_settlements(receiver, entries) -> list[str]:
    """Settled versions make later arrivals count as duplicates (R13): each must be signed."""
    out: list[str] = []
    expected: dict[tuple, int] = {}
    for e, p in _payloads(entries, ("settles", "case_key", "quarantine_id"), out):
        for s in p["settles"]:
            expected[(p["case_key"], s.get("frame_text"), s.get("payload"), p["quarantine_id"])] = e["seq"]
    S = receiver.m.Settlement
    for sid, *key in S.select(S.id, S.case_key, S.frame_text, S.payload, S.quarantine_id).order_by(S.id).tuples():
        if expected.pop(tuple(key), None) is None:
            out.append(f"settlement #{sid}: {_s(key[1], 48)} of {_s(key[0])} was settled by no signed entry")
    for (case_key, text, _payload, _qid), seq in sorted(expected.items(), key=lambda kv: kv[1]):
        out.append(f"settlements: {_s(text, 48)} of {_s(case_key)}, settled by entry #{seq}, is missing")
    return out


# -- retention policy -------------------------------------------------------------------
def check_retention(receiver, entries) -> list[str]:
    out: list[str] = []
    expected = {e["seq"]: (e, p) for e, p in _payloads(entries, ("to_seconds", "exception"), out)}
    P = receiver.m.Policy
    last = 0
    for row in P.select().order_by(P.id).dicts():
        where = f"retention policy #{row['id']} ({_s(row['retention_seconds'])} s)"
        want = expected.pop(row["audit_id"], None)
        if want is None:
            out.append(f"{where}: no signed entry set it" + (
                f" (it names entry #{_s(row['audit_id'])})" if row["audit_id"] is not None else ""))
            continue
        e, p = want
        if e["seq"] < last:
            out.append(f"{where}: stands after the row of entry #{last}, but entry #{e['seq']} was signed before it")
        last = max(last, e["seq"])
        out.extend(_differs(where, e["seq"], [
            ("retention_seconds", row["retention_seconds"], p["to_seconds"]),
            ("set_by", row["set_by"], e["operator"]), ("reason", row["reason"], e["reason"]),
            ("set_at", row["set_at"], e["at"]), ("is_exception", bool(row["is_exception"]), p["exception"]),
        ]))
    for seq in sorted(expected):
        out.append(f"retention policy: the row of entry #{seq} ({_s(expected[seq][1]['to_seconds'])} s) is missing")
    return out


# -- operators -------------------------------------------------------------------------
def check_operators(receiver, entries) -> list[str]:
    out: list[str] = []
    expected: dict[str, dict] = {}  # name -> the row the log says it is, and the entry that says so
    for e in entries:
        p = e["payload"] if isinstance(e["payload"], dict) else {}
        if e["action"] == OPERATOR_ADOPT:
            for op in p.get("operators") or []:
                expected[op["name"]] = {**op, "seq": e["seq"]}
        elif e["action"] == OPERATOR_ADD:
            expected[p["name"]] = {"name": p["name"], "public_key": p["public_key"], "fingerprint": p["fingerprint"],
                                   "added_at": e["at"], "retired_at": None, "seq": e["seq"]}
        elif e["action"] == OPERATOR_RETIRE and p.get("name") in expected:
            expected[p["name"]].update(retired_at=e["at"], seq=e["seq"])
    from .audit_models import audit_models

    O = audit_models(receiver.db).Operator
    for row in O.select().order_by(O.id).dicts():
        want = expected.pop(row["name"], None)
        where = f"operator {_s(row['name'])}"
        if want is None:
            out.append(f"{where}: no signed entry added this operator"
                       + ("" if entries else " (operators from before signed operator changes are adopted once: "
                                             "`ussd-console operator adopt --operator NAME`)"))
            continue
        out.extend(_differs(where, want["seq"], [
            (f, row[f], want[f]) for f in ("public_key", "fingerprint", "added_at", "retired_at")]))
    for name, want in sorted(expected.items()):
        out.append(f"operator {_s(name)}: missing, although entry #{want['seq']} registered them")
    return out


register("quarantine", (RESOLVE_KEEP, RESOLVE_ACCEPT), check_quarantine)
register("ledger", (RESOLVE_ACCEPT,), check_ledger)
register("settlements", (RESOLVE_KEEP, RESOLVE_ACCEPT), check_settlements)
register("retention", (RETENTION_SET,), check_retention)
register("operators", (OPERATOR_ADD, OPERATOR_RETIRE, OPERATOR_ADOPT), check_operators)


def check_case_marks(receiver, entries) -> list[str]:
    """Case status marks: each mark row has its signed entry and each case its last mark's status."""
    problem = check_marks(receiver)
    return [] if problem is None else [problem.why]


register("case status", (MARK_ACTION,), check_case_marks)


# Gateway accounts (who may post frames over HTTP): each row the effect of its signed entries.
register("gateways", (GATEWAY_ADD, GATEWAY_RETIRE), check_gateways)
