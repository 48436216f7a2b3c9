"""
The one syntax of the rendered spans in README.md, docs/ and the experiments' reports:

    <!-- KIND: NAME -->...<!-- /KIND -->

`KIND` says who writes the span: `numbers`, `python -m experiments.docs_numbers` (a number or a
table of README.md and docs/, from a committed JSON); `report`, the experiment that measured it
(its section of RESULTS.md, QUALITY.md or SCALE.md, rewritten at the end of its run). Spans do
not nest, so a span ends at the first `<!-- /KIND -->` after its start.
"""

import re
from pathlib import Path
from typing import Pattern, Tuple


def markers(name: str, kind: str = "report") -> Tuple[str, str]:
    """The start and end markers of the span `name` of `kind`."""
    return f"<!-- {kind}: {name} -->", f"<!-- /{kind} -->"


def spans(kind: str) -> Pattern:
    """Every span of `kind`: group 1 its name, group 2 what it holds."""
    return re.compile(rf"<!-- {kind}: ([\w-]+) -->(.*?)<!-- /{kind} -->", re.S)


def replace_section(path, begin: str, end: str, section: str) -> None:
    """Writes `section` (which starts with `begin` and ends with `end`) into the markdown file
    `path` in place of the text between those markers, or appends it; the rest is kept, one
    blank line after the section where text follows it."""
    path = Path(path)
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    if begin in current and end in current.split(begin, 1)[-1]:
        before, rest = current.split(begin, 1)
        after = rest.split(end, 1)[1].lstrip("\n")
        current = before + section.rstrip("\n") + "\n" + ("\n" + after if after else "")
    else:
        current = current + ("\n" if current else "") + section
    path.write_text(current, encoding="utf-8")
