"""`experiments/common/markers.py`: the one span syntax and the report helper."""
from experiments.common import markers

A = markers.markers("a")
B = markers.markers("b")


def section(begin_end, body: str) -> str:
    begin, end = begin_end
    return f"{begin}\n{body}\n{end}\n"


def test_replace_section_keeps_what_surrounds_it(tmp_path):
    report = tmp_path / "REPORT.md"
    markers.replace_section(report, *A, section(A, "first"))
    assert report.read_text() == section(A, "first")  # appended to nothing
    report.write_text("# Title\n\n" + section(A, "old") + "\nProse after it.\n")
    markers.replace_section(report, *A, section(A, "new"))
    expected = "# Title\n\n" + section(A, "new") + "\nProse after it.\n"
    assert report.read_text() == expected
    markers.replace_section(report, *A, section(A, "new"))
    assert report.read_text() == expected  # rendering again changes nothing
    report.write_text("# Title\n\n" + section(A, "old"))  # nothing after it
    markers.replace_section(report, *A, section(A, "new"))
    assert report.read_text() == "# Title\n\n" + section(A, "new")


def test_a_section_ends_at_the_first_end_after_its_own_start(tmp_path):
    # Every report section ends with the same `<!-- /report -->`: rewriting the second section
    # leaves the first, and its end, alone; a section not there yet is appended after both.
    assert A[1] == B[1] == "<!-- /report -->"
    report = tmp_path / "REPORT.md"
    report.write_text(section(A, "one") + "\n" + section(B, "two") + "\nTail.\n")
    markers.replace_section(report, *B, section(B, "TWO"))
    assert report.read_text() == section(A, "one") + "\n" + section(B, "TWO") + "\nTail.\n"
    C = markers.markers("c")
    markers.replace_section(report, *C, section(C, "three"))
    assert report.read_text().endswith("Tail.\n\n" + section(C, "three"))
    assert report.read_text().startswith(section(A, "one"))


def test_spans_finds_each_span_of_its_kind_by_name():
    text = ("<!-- numbers: x-1 -->1.5<!-- /numbers --> and " + section(A, "body")
            + "<!-- numbers: y -->\n| t |\n<!-- /numbers -->")  # fmt: skip
    assert [(m.group(1), m.group(2)) for m in markers.spans("numbers").finditer(text)] == [
        ("x-1", "1.5"), ("y", "\n| t |\n")]  # fmt: skip
    assert [m.group(1) for m in markers.spans("report").finditer(text)] == ["a"]
