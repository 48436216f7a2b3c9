"""
Scores over seeds: their mean ± standard deviation, and whether one system's mean is ahead of
another's. A summary is `{"mean": ..., "std": ..., "n": ...}` (`over_seeds`, or as the
experiments' JSON files record it).
"""

import math
import statistics
from typing import Sequence, Tuple


def mean_and_std(values: Sequence[float], scale: float = 100.0) -> Tuple[float, float]:
    """The mean of `values` (at least one) and their sample standard deviation (0 for one value),
    times `scale`."""
    mean = statistics.mean(values) * scale
    return mean, statistics.stdev(values) * scale if len(values) > 1 else 0.0


def over_seeds(values: Sequence[float], scale: float = 100.0) -> dict:
    """The summary of `values` (at least one), times `scale`."""
    mean, std = mean_and_std(values, scale)
    return {"mean": mean, "std": std, "n": len(values)}


def mean_std_of(found: dict, digits: int = 2, count: bool = True) -> str:
    """A summary as "mean ± std (n=N)"; one run as "mean (n=1)", having no spread to show.
    Without `count`, "mean ± std" whatever N."""
    if not count:
        return f"{found['mean']:.{digits}f} ± {found['std']:.{digits}f}"
    if found["n"] == 1:
        return f"{found['mean']:.{digits}f} (n=1)"
    return f"{found['mean']:.{digits}f} ± {found['std']:.{digits}f} (n={found['n']})"


def mean_std(values: Sequence[float], scale: float = 100.0, digits: int = 2) -> str:
    """`values` times `scale` as `mean_std_of` writes them; "-" for none."""
    return mean_std_of(over_seeds(values, scale), digits) if values else "-"


def difference(mine: dict, theirs: dict) -> Tuple[float, float]:
    """The difference of two summaries' means and twice its standard error (Welch's),
    2 sqrt(s1^2 / n1 + s2^2 / n2), about a 95% interval."""
    spread = 2 * math.sqrt(mine["std"] ** 2 / mine["n"] + theirs["std"] ** 2 / theirs["n"])
    return mine["mean"] - theirs["mean"], spread


def verdict(mine: dict, theirs: dict, within: str = "within") -> str:
    """"ahead" or "behind" where the `difference` lies beyond its spread either way, else
    `within`."""
    found, spread = difference(mine, theirs)
    return "ahead" if found > spread else "behind" if found < -spread else within
