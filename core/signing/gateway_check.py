"""The gateway accounts reconciled with the signed log: each row the effect of its ``gateway.add``
and ``gateway.retire`` entries (``audit verify`` runs it through ``reconcile``)."""

from __future__ import annotations

from core.rules.text import escape_text
from core.store.gateway_tables import gateway_models

GATEWAY_ADD = "gateway.add"
GATEWAY_RETIRE = "gateway.retire"


def check_gateways(receiver, entries) -> list[str]:
    """Every gateway row must be the effect of its signed entries, and every entry's effect there."""
    out: list[str] = []
    expected: dict[str, dict] = {}
    for e in entries:
        p = e["payload"] if isinstance(e["payload"], dict) else {}
        name = p.get("name")
        if not isinstance(name, str):
            out.append(f"audit entry #{e['seq']} ({e['action']}): its signed payload cannot be read")
            continue
        if e["action"] == GATEWAY_ADD:
            expected[name] = {"kind": p.get("kind"), "token_hash": p.get("token_hash"),
                              "secret_file": p.get("secret_file"), "public_url": p.get("public_url"),
                              "reply": p.get("reply"), "added_at": e["at"], "added_by": e["operator"],
                              "added_seq": e["seq"], "retired_at": None, "retired_seq": None, "seq": e["seq"]}
        elif e["action"] == GATEWAY_RETIRE and name in expected:
            expected[name].update(retired_at=e["at"], retired_seq=e["seq"], seq=e["seq"])
    G = gateway_models(receiver.db).Gateway
    for row in G.select().order_by(G.name).dicts():
        where = f"gateway {escape_text(row['name'], 40)}"
        want = expected.pop(row["name"], None)
        if want is None:
            out.append(f"{where}: no signed entry added this gateway")
            continue
        for field in ("kind", "token_hash", "secret_file", "public_url", "reply", "added_at", "added_by",
                      "added_seq", "retired_at", "retired_seq"):
            if row[field] != want[field]:
                out.append(f"{where}: {field} is {escape_text(str(row[field]), 40)}, "
                           f"entry #{want['seq']} signed {escape_text(str(want[field]), 40)}")
    for name, want in sorted(expected.items()):
        out.append(f"gateway {escape_text(name, 40)}: missing, although entry #{want['seq']} added it")
    return out
