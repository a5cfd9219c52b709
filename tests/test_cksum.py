"""The trailer against the system's own cksum (coreutils, always there): an independent oracle."""

import random
import subprocess

import pytest

from core.rules.cksum import cksum, cksum_reference, trailer

SEED_FRAMES = [
    ("1", "Kakuma1", "MED", "3", "86", "H1|1|Kakuma1|MED|3|86|#89"),
    ("2", "Kakuma2", "SHE", "8", "71", "H1|2|Kakuma2|SHE|8|71|#09"),
    ("3", "Kakuma1", "WAT", "12", "69", "H1|3|Kakuma1|WAT|12|69|#1a"),
]


def system_cksum(data: bytes) -> int:
    out = subprocess.run(["cksum"], input=data, capture_output=True, check=True).stdout
    return int(out.split()[0])


def test_fast_and_table_agree_with_system_cksum():
    rng = random.Random(7)
    samples = [b"", b"a", b"H1|1|Kakuma1|MED|3|86", bytes(range(256)), b"x" * 70_000]
    samples += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))) for _ in range(40)]
    for data in samples:
        want = system_cksum(data)
        assert cksum_reference(data) == want
        assert cksum(data) == want


def test_fast_equals_reference_on_many_bodies():
    rng = random.Random(11)
    for _ in range(3000):
        data = bytes(rng.randrange(32, 127) for _ in range(rng.randrange(0, 300)))
        assert cksum(data) == cksum_reference(data)
        assert trailer(data.decode()) == f"{cksum_reference(data) & 0xFF:02x}"


def system_frame(seq, site, need, hc, pri) -> str:
    """A frame as the POSIX field adapter packs it: the trailer is the system cksum of the body, mod 256."""
    body = f"H1|{seq}|{site}|{need}|{hc}|{pri}"
    return f"{body}|#{system_cksum(body.encode()) % 256:02x}"


@pytest.mark.parametrize("seq,site,need,hc,pri,expected", SEED_FRAMES)
def test_seed_frames_match_the_system_cksum(seq, site, need, hc, pri, expected):
    assert system_frame(seq, site, need, hc, pri) == expected
    body = expected.rsplit("|#", 1)[0]
    assert trailer(body) == expected[-2:]


def test_random_frames_match_the_system_cksum():
    rng = random.Random(3)
    for _ in range(25):
        seq, hc, pri = rng.randrange(1, 10000), rng.randrange(0, 10**6), rng.randrange(0, 1000)
        site = "".join(rng.choice("abcXYZ019") for _ in range(rng.randrange(1, 9)))
        need = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(3))
        built = system_frame(seq, site, need, hc, pri)
        assert trailer(built.rsplit("|#", 1)[0]) == built[-2:]
