"""Two operators signing at the same moment from two processes: still one hash chain."""

import os
import subprocess
import sys

from core import Receiver
from core.signing.audit import verify
from core.home import Home
from core.signing.operator_add import add_operator
from core.signing.operators import load_signer
from tests.support.helpers import ROOT
from tests.support.signing import PASSPHRASES

SIGNER = """
import sys
from core import Receiver
from core.signing import signed_action
from core.signing.actions import RETENTION
from core.home import Home
from tests.support.signing import PASSPHRASES
home, target, name, n = Home.resolve(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
with Receiver(target) as r:
    sys.stdout.write("ready\\n"); sys.stdout.flush(); sys.stdin.readline()
    for i in range(n):
        signed_action.sign(home, r, RETENTION, {"days": 31 + i + (0 if name == "alice" else 30)}, operator=name,
                           passphrase=PASSPHRASES[name], reason=f"round {i}")
"""


def test_simultaneous_signers_keep_a_single_chain(new_store, tmp_path):
    home = Home(tmp_path / "home").ensure()
    target = new_store()
    with Receiver(target) as r:
        add_operator(home, r, "alice", PASSPHRASES["alice"])
        add_operator(home, r, "bob", PASSPHRASES["bob"], sponsor=load_signer(home, r, "alice", PASSPHRASES["alice"]),
                     roles=["admin", "resolver", "dispatcher"])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", SIGNER, str(home.root), target, name, "15"], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("alice", "bob")]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with Receiver(target) as r:
        result = verify(r)
        assert result.ok, result
        assert result.count == 32  # two operator.add entries, then 30 signed changes
