"""`experiments/speed/front_doors.py` at fixture size: every front door runs and the report is written
(no timing is asserted)."""

from experiments.speed import front_doors
from tests import FIXTURES_ROOT


def load_script():
    return front_doors


def test_every_front_door_is_measured(elmo_c_archive, tmp_path):
    report = tmp_path / "RESULTS.md"
    report.write_text("# Results\n\nkept\n")
    script = load_script()
    script.main(["--model", str(elmo_c_archive), "--text", str(FIXTURES_ROOT / "data" / "lm" / "sentences.txt"),
                 "--sentences", "20", "--batch-size", "8", "--repeats", "1", "--scratch", str(tmp_path),
                 "--report", str(report)])  # fmt: skip
    text = report.read_text()
    assert text.startswith("# Results\n\nkept\n")
    for name in ("module", "ElmoC", "ElmoCEmbedder", "token_embedder", "huggingface", "spacy"):
        assert f"| {name} |" in text
    assert "MiB" in text and "package" in text
    # Run again: the section is replaced, not appended.
    script.main(["--model", str(elmo_c_archive), "--text", str(FIXTURES_ROOT / "data" / "lm" / "sentences.txt"),
                 "--sentences", "4", "--repeats", "1", "--scratch", str(tmp_path), "--report", str(report)])  # fmt: skip
    assert report.read_text().count("<!-- report: front-doors -->") == 1
