"""The crash harness in its short form (``make crashtest`` runs the full one): a real
``ussd-console watch`` killed with SIGKILL at random instants over a mixed inbox ends with
the same store and the same archive as one clean run."""

from tests.crash_harness import run


def test_ten_sigkills_of_the_watcher_change_nothing_against_a_clean_run(tmp_path):
    """Each watcher waits after every commit until the harness lets it go: ten kills on any machine."""
    result = run(tmp_path, frames=5000, kills=10, seed=7, timeout=600)
    assert result.differences == []
    assert result.kills == 10 and result.exited_early == 0
    assert result.kills_mid_file >= result.kills_at_commit > 0  # a kill at a commit leaves the file part read
    assert (result.lost, result.double_counted, result.integrity, result.tracebacks) == (0, 0, "ok", 0)
    assert result.frames >= 5000 and sum(result.outcomes.values()) == result.frames
