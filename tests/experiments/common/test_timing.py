"""`experiments/common/timing.py`'s report helper."""
from experiments.common import timing


def test_replace_section_keeps_what_surrounds_it(tmp_path):
    report = tmp_path / "REPORT.md"
    timing.replace_section(report, "<!-- a -->", "<!-- /a -->", "<!-- a -->\nfirst\n<!-- /a -->\n")
    assert report.read_text() == "<!-- a -->\nfirst\n<!-- /a -->\n"  # appended to nothing
    report.write_text("# Title\n\n<!-- a -->\nold\n<!-- /a -->\n\nProse after it.\n")
    timing.replace_section(report, "<!-- a -->", "<!-- /a -->", "<!-- a -->\nnew\n<!-- /a -->\n")
    expected = "# Title\n\n<!-- a -->\nnew\n<!-- /a -->\n\nProse after it.\n"
    assert report.read_text() == expected
    timing.replace_section(report, "<!-- a -->", "<!-- /a -->", "<!-- a -->\nnew\n<!-- /a -->\n")
    assert report.read_text() == expected  # rendering again changes nothing
    report.write_text("# Title\n\n<!-- a -->\nold\n<!-- /a -->\n")  # nothing after it
    timing.replace_section(report, "<!-- a -->", "<!-- /a -->", "<!-- a -->\nnew\n<!-- /a -->\n")
    assert report.read_text() == "# Title\n\n<!-- a -->\nnew\n<!-- /a -->\n"
