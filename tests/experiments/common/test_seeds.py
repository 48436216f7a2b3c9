import math

import pytest

from experiments.common import seeds
from experiments.quality.report import downstream_difference


def test_a_summary_written_with_and_without_its_count():
    found = seeds.over_seeds([0.5, 0.7])
    assert found == {"mean": pytest.approx(60.0), "std": pytest.approx(14.142, abs=1e-3), "n": 2}
    assert seeds.mean_std_of(found) == "60.00 ± 14.14 (n=2)"
    assert seeds.mean_std_of(found, digits=1, count=False) == "60.0 ± 14.1"
    assert seeds.mean_std_of(seeds.over_seeds([0.5], scale=1.0), digits=4) == "0.5000 (n=1)"


def test_scores_and_their_summaries_meet_the_same_welch_rule():
    mine, theirs = [0.52, 0.55, 0.58], [0.50, 0.51]
    spread = 2 * math.sqrt(0.0009 / 3 + 0.00005 / 2)  # sample variances 0.0009 and 0.00005
    found = downstream_difference(mine, theirs)
    summarized = seeds.difference(seeds.over_seeds(mine), seeds.over_seeds(theirs))
    assert (found["difference"], found["spread"]) == pytest.approx((0.045, spread))
    assert summarized == pytest.approx((4.5, 100 * spread))
    assert found["verdict"] == seeds.verdict(seeds.over_seeds(mine), seeds.over_seeds(theirs))
    close = seeds.over_seeds([0.5, 0.6]), seeds.over_seeds([0.52, 0.57])
    assert seeds.verdict(*close) == "within"
    assert seeds.verdict(*close, within="within the spread") == "within the spread"
