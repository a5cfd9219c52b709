"""Each gateway kind is one declared thing: a module of ``core/gateways/kinds/`` with its docs page
and its recorded requests (``tests/vectors/gateways/<kind>/``), and nothing else in the code
branches on a kind's name.

Each recorded request carries what the kind made of it when it was recorded: the signature check,
the messages (gateway message id, session, items with a reject's reason), an ignored event, and
the answers once committed and, for a kind that can tell its sender, after a failed commit.
"""

from __future__ import annotations

import ast
import base64
import json
from pathlib import Path

import pytest

from core.gateways.adapters import Kind, Request
from core.gateways.kinds import KINDS
from core.rules.frame import Unreadable
from tests.support.helpers import ROOT

VECTORS = ROOT / "tests" / "vectors" / "gateways"
RECORDED = sorted(VECTORS.glob("*/*.json"))
PHONE_DIGITS = "711222333"  # the phone number every recorded request carries


def test_every_kind_has_its_module_docs_page_and_recorded_requests():
    modules = sorted(p.stem for p in (ROOT / "core" / "gateways" / "kinds").glob("*.py") if p.stem != "__init__")
    assert modules == sorted(name.replace("-", "_") for name in KINDS) and len(KINDS) >= 6
    listed = (ROOT / "docs" / "gateways" / "README.md").read_text(encoding="utf-8")
    for name, kind in KINDS.items():
        assert isinstance(kind, Kind) and kind.name == name
        assert (ROOT / "docs" / "gateways" / f"{name}.md").is_file(), name
        assert f"`{name}`" in listed and f"({name}.md)" in listed, name
        assert list((VECTORS / name).glob("*.json")), f"{name} has no recorded request"
        assert not kind.needs_url or kind.signed, name  # a URL is only ever part of a signature
    assert {p.name for p in VECTORS.iterdir()} == set(KINDS)


def _request(doc: dict) -> Request:
    body = base64.b64decode(doc["body_base64"]) if "body_base64" in doc else doc["body"].encode("utf-8")
    return Request({k.lower(): v for k, v in doc["headers"].items()}, body, "/in/office/tok123")


def _items(message) -> list[list]:
    return [[fid, str(text), text.reason if isinstance(text, Unreadable) else None] for fid, text in message.items]


@pytest.mark.parametrize("path", RECORDED, ids=[f"{p.parent.name}/{p.stem}" for p in RECORDED])
def test_a_recorded_request_is_read_checked_and_answered_as_recorded(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    kind, req = KINDS[path.parent.name], _request(doc)
    secret = None if doc["secret"] is None else doc["secret"].encode()
    check = kind.verify(req, secret, doc["url"], doc["now"])
    assert {"ok": check.ok, "why": check.why, "skew": check.skew} == doc["verify"]
    parsed = kind.parse(req)
    got = [{"gateway_id": m.gateway_id, "session": m.session, "items": _items(m)} for m in parsed.messages]
    assert (got, parsed.ignored) == (doc["messages"], doc["ignored"])
    assert PHONE_DIGITS not in repr(parsed)
    taken = [fid for m in parsed.messages for fid, text in m.items if fid is not None and not isinstance(text, Unreadable)]
    assert taken == doc["reply"]["taken"]
    content_type, body = kind.reply(taken, doc["reply_prefix"])
    assert {"taken": taken, "content_type": content_type, "body": body.decode()} == doc["reply"]
    failed = kind.reply(None, doc["reply_prefix"])
    assert (None if failed is None else {"content_type": failed[0], "body": failed[1].decode()}) == doc["reply_failed"]


def test_every_kind_has_a_request_that_is_read_and_one_it_refuses_or_ignores():
    """Each kind's folder holds a post taken in, and a post refused, ignored or read as a reject."""
    for name in KINDS:
        docs = [json.loads(p.read_text(encoding="utf-8")) for p in (VECTORS / name).glob("*.json")]
        assert any(d["verify"]["ok"] and d["reply"]["taken"] for d in docs), name
        assert any(not d["verify"]["ok"] or d["ignored"] or not d["reply"]["taken"] for d in docs), name


def kind_branches(source: str, names: set[str]) -> list[int]:
    """Lines of ``source`` that compare a value with a kind's name (``kind == "twilio"``, ``kind in
    ("a", "b")``) or key a table by kind names: the branches a kind module replaces."""
    def named(node) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(named(e) for e in node.elts)
        return False

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(named(n) for n in [node.left, *node.comparators]):
            found.append(node.lineno)
        elif isinstance(node, ast.Dict) and any(k is not None and named(k) for k in node.keys):
            found.append(node.lineno)
    return found


def test_no_code_outside_the_kinds_branches_on_a_kind():
    names = set(KINDS)
    kinds_folder = ROOT / "core" / "gateways" / "kinds"
    found = []
    for folder in ("core", "console", "tools"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if kinds_folder in path.parents:
                continue
            found += [f"{path.relative_to(ROOT)}:{line}" for line in kind_branches(path.read_text(encoding="utf-8"), names)]
    assert not found, "a kind's name branched on outside its module: " + ", ".join(found)


def test_the_kind_branch_check_can_fail():
    names = {"twilio", "africastalking-ussd"}
    source = ('if kind == "africastalking-ussd":\n    pass\n'
              'ok = kind in ("twilio", "smsgate")\n'
              'PARSERS = {"twilio": parse}\n'
              'fine = kind == "other" or name == kind\n')
    assert kind_branches(source, names) == [1, 3, 4]
