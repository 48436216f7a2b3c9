import random

import pytest

from allennlp_elmo_c.common.recent_set import RecentSet


def test_a_key_is_found_within_the_window_and_never_when_it_was_not_given():
    rng = random.Random(0)
    limit = 50
    recent = RecentSet(limit)
    given = []  # every key, in order
    for _ in range(5_000):
        key = rng.randrange(400)  # repeats near and far
        found = recent.seen(key)
        # The reference: the distinct keys given since `key` was last given.
        last = max((i for i, k in enumerate(given) if k == key), default=None)
        if last is None:
            assert not found  # never a key that was not given
        elif len(set(given[last + 1 :])) < limit // 2:
            assert found  # within the window: always found
        given.append(key)
        assert len(recent) <= limit


def test_a_key_that_keeps_coming_back_is_never_forgotten_and_forgetting_is_counted():
    recent = RecentSet(4)
    assert not recent.seen("boilerplate")
    for number in range(100):
        assert not recent.seen(number)
        assert recent.seen("boilerplate")
    assert recent.forgotten >= 90 and len(recent) <= 4
    assert not recent.seen(0)  # long gone


def test_the_limit_is_checked():
    with pytest.raises(ValueError, match="limit must be >= 2"):
        RecentSet(1)
