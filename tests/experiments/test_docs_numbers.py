"""`experiments/docs_numbers.py`: every numbers block of README.md and docs/ is what its data
renders, and a change to the data or to a block is caught."""
import json

import pytest

from experiments import docs_numbers


def test_every_block_agrees_with_its_data():
    assert docs_numbers.disagreements() == []


def test_every_block_named_in_the_documents_exists_and_the_readme_has_the_results():
    names = set()
    for document in docs_numbers.DOCUMENTS:
        text = (docs_numbers.PROJECT / document).read_text(encoding="utf-8")
        names |= {found.group(1) for found in docs_numbers.BLOCK.finditer(text)}
        assert text.count("<!-- numbers:") == text.count("<!-- /numbers -->"), document
    assert names <= set(docs_numbers.BLOCKS)
    assert {"quality-table", "demo-result"} <= names


def test_a_changed_number_in_the_data_is_a_disagreement(tmp_path, monkeypatch):
    data = json.loads(docs_numbers.WINS.read_text())
    row = next(r for r in data["rows"] if r["system"] == "elmo_c_in_batch" and r["minutes"] == 60)
    row["test"]["stsb"]["mean"] += 1.0
    changed = tmp_path / "wins.json"
    changed.write_text(json.dumps(data))
    monkeypatch.setattr(docs_numbers, "WINS", changed)
    assert "README.md: quality-table" in docs_numbers.disagreements()


def test_a_number_edited_by_hand_is_a_disagreement(tmp_path, monkeypatch):
    readme = (docs_numbers.PROJECT / "README.md").read_text(encoding="utf-8")
    block = "<!-- numbers: in-batch-ahead-of-cosine -->"
    start = readme.index(block) + len(block)
    edited = readme[:start] + "4" + readme[start + 1 :]
    (tmp_path / "README.md").write_text(edited, encoding="utf-8")
    monkeypatch.setattr(docs_numbers, "PROJECT", tmp_path)
    assert docs_numbers.disagreements(["README.md"]) == ["README.md: in-batch-ahead-of-cosine"]


def test_the_verdicts_are_twice_the_standard_error_written_out():
    # +0.12 against a spread of 2 sqrt(0.03^2 / 3 + 0.03^2 / 3) = 0.049: ahead.
    mine, theirs = {"mean": 95.93, "std": 0.03, "n": 3}, {"mean": 95.81, "std": 0.03, "n": 3}
    found, spread = docs_numbers.difference(mine, theirs)
    assert found == pytest.approx(0.12) and spread == pytest.approx(0.04899, abs=1e-5)
    assert docs_numbers.verdict(mine, theirs) == "ahead"
    assert docs_numbers.verdict(theirs, mine) == "behind"
    assert docs_numbers.verdict(mine, dict(theirs, std=0.3)) == "within"


def test_unknown_block_names_are_refused():
    with pytest.raises(KeyError, match="unknown numbers block 'no-such'"):
        docs_numbers.rendered("<!-- numbers: no-such -->1<!-- /numbers -->")


RESULT_LIKE = docs_numbers.re.compile(r"±|\b\d+(?:\.\d+)?(?:x|%)(?!\w)")


def typed_results(text: str):
    """Result-like numbers (a ±, a ratio such as 1.4x, a percentage) outside numbers blocks and
    code blocks: numbers typed by hand."""
    text = docs_numbers.BLOCK.sub("", text)
    prose = [line for i, line in enumerate(text.split("```")) if i % 2 == 0]
    return [match.group(0) for part in prose for match in RESULT_LIKE.finditer(part)]


@pytest.mark.parametrize("document", docs_numbers.DOCUMENTS)
def test_no_result_is_typed_by_hand(document):
    assert typed_results("a 4.2x speed-up, 95.93 ± 0.03 <!-- numbers: x -->1.4x<!-- /numbers -->") == ["4.2x", "±"]
    text = (docs_numbers.PROJECT / document).read_text(encoding="utf-8")
    assert typed_results(text) == [], f"{document}: render these from data or link the report"
