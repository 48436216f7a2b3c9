"""
The Flair comparison's rules that its report (`flair_comparison.py`) and the docs' numbers
(`experiments/docs_numbers.py`) both read from its JSON, kept free of torch so that rendering the
docs stays light: which systems are Flair's, and which Flair size a budget's comparison uses.
"""

import re
import statistics
from typing import Optional

FLAIR = re.compile(r"flair_(\d+)$")


def chosen_flair(data: dict, minutes: str, task: str = "ner") -> Optional[str]:
    """The Flair size with the better mean development score on `task` at `minutes` (the choice
    on dev)."""
    scored = [(statistics.mean(cells[minutes][task]["dev"]), system)
              for system, cells in data["cells"].items()
              if FLAIR.match(system) and minutes in cells and cells[minutes][task]["dev"]]  # fmt: skip
    return max(scored)[1] if scored else None
