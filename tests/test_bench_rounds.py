"""``make bench``'s own set-up: every round ingests into a store of its own.

Once, each one-round call named its stores after round 0, so every round after the first
ingested the file into a store that held it already (all re-sends) and its "empty-store"
rate read 1.3x too high. The figures themselves are printed by ``make bench``, never asserted.
"""

from core import Receiver
from tests.bench import ab_rates, copy_synced, mixed_lines, write_file
from tests.support.helpers import frame


def test_each_round_of_the_alternated_rates_starts_from_an_empty_store(tmp_path):
    path = tmp_path / "mixed.txt"
    write_file(path, mixed_lines(300, "a"))
    from core.rules import compiled

    built = compiled.loops
    for k in range(2):  # as the bench calls it: one round at a time
        names = ab_rates(tmp_path, path, 1, first=k)
    assert compiled.loops is built  # the Python loops' round put the compiled ones back
    assert set(names) == ({"fast", "python", "reference"} if built is not None else {"fast", "reference"})
    for k in range(2):
        for name in names:
            with Receiver(str(tmp_path / f"ab-{name}-{k}.db")) as r:
                assert r.totals().frames == 300, (name, k)


def test_the_loaded_store_is_copied_whole(tmp_path):
    source = tmp_path / "filled.db"
    with Receiver(str(source)) as r:
        r.ingest_many([("f1-1", frame(1, "S1", "MED", 3, 50))])
    copy_synced(source, tmp_path / "copy.db")
    assert (tmp_path / "copy.db").read_bytes() == source.read_bytes()
