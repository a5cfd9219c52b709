"""Adding an operator signs through the one signed-action path; only a home's first operator signs
their own entry with the key it registers (``signs_itself``), and no later key can."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from core import Receiver
from core.signing import audit, signed_action
from core.signing.keys import ActionError, Signer, fingerprint, key_path, public_raw
from core.signing.operator_add import ADD, add_operator
from core.signing.operators import list_operators

from .support.signing import PASS


def test_the_first_operator_signs_their_own_entry_with_every_role(home):
    with Receiver(str(home.db)) as r:
        info = add_operator(home, r, "alice", PASS)
        assert info["roles"] == ["admin", "dispatcher", "resolver"] and list(info)[-1] == "entry"
        assert info["entry"]["operator"] == "alice" and info["entry"]["action"] == "operator.add"
        assert key_path(home, "alice").exists()


def test_a_key_cannot_register_itself_once_a_home_has_an_operator(home):
    with Receiver(str(home.db)) as r:
        add_operator(home, r, "alice", PASS)
        with pytest.raises(ActionError, match="approved by an admin"):
            add_operator(home, r, "mallory", "mallory passphrase")
        key = Ed25519PrivateKey.generate()  # straight through sign, with the key it would register
        signer = Signer("mallory", fingerprint(public_raw(key)), key)
        with pytest.raises(ActionError, match="approved by an admin"):
            signed_action.sign(home, r, ADD, {"name": "mallory", "key": key, "roles": ["admin"]},
                               operator="mallory", signer=signer, reason="let me in")
        assert not key_path(home, "mallory").exists()
        assert audit.head(r).count == 1
        assert [o["name"] for o in list_operators(r)] == ["alice"]
