"""What the log says of gateway posts (core/gateways/tally.py): a gateway's first post on its own
line, then a summary by answer; a path that names no gateway is never named by what it said."""

from core.gateways.tally import NO_GATEWAY, PostTally


def test_the_first_post_of_each_gateway_has_a_line_and_the_rest_are_summed_by_answer():
    tally = PostTally()
    assert tally.add("office", 200, 3.14) == "gateway office: first post since the start, answered 200 in 3.1 ms"
    assert tally.add("office", 200, 12.0) is None
    assert tally.add("office", 429, 0.5) is None
    assert tally.add("office", 200, 7.25) is None
    assert tally.add("north", 403, 1.0).startswith("gateway north: first post since the start, answered 403")
    assert tally.add(NO_GATEWAY, 404, 0.2) is None  # counted, never announced
    assert tally.add(NO_GATEWAY, 404, 0.9) is None
    assert tally.summary(60.0) == [
        "posts to no gateway: 2 posts in 60 s: 2 answered 404; slowest 0.9 ms",
        "gateway office: 3 posts in 60 s: 2 answered 200, 1 answered 429; slowest 12.0 ms",
    ]
    assert tally.summary(60.0) == []  # said once: the next minute starts from nothing
    assert tally.add("office", 200, 2.0) is None  # its first post was told already
    assert tally.summary(30.4) == ["gateway office: 1 post in 30 s: 1 answered 200; slowest 2.0 ms"]


def test_counts_are_written_with_thousands_separators():
    tally = PostTally()
    tally.add("office", 200, 1.0)
    for _ in range(1234):
        tally.add("office", 200, 1.0)
    assert tally.summary(60.0) == ["gateway office: 1,234 posts in 60 s: 1,234 answered 200; slowest 1.0 ms"]
