"""`experiments/speed/embed_memory.py` at fixture size: both ways in run in fresh processes and the
report is written (the figures are not asserted)."""

from experiments.speed import embed_memory
from tests import FIXTURES_ROOT, PROJECT_ROOT


def test_both_ways_in_are_measured(elmo_c_archive, tmp_path, monkeypatch):
    script = embed_memory
    monkeypatch.chdir(PROJECT_ROOT)  # the fixture archive's fastText path is relative to it
    report = tmp_path / "RESULTS.md"
    script.main(["--model", str(elmo_c_archive), "--text", str(FIXTURES_ROOT / "data" / "lm" / "sentences.txt"),
                 "--small", "10", "--large", "50", "--report", str(report)])  # fmt: skip
    text = report.read_text()
    assert "| elmo-c-embed |" in text and "| ElmoCEmbedder |" in text and "x |" in text
