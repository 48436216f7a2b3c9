"""`experiments/quality/training_profile.py` at fixture size: each system's pretraining config runs with
the `step_phases` callback and the report's table has a row per system."""
import json

from experiments.quality import training_profile
from tests import FIXTURES_ROOT
from tests.experiments.quality.pipeline_fixtures import EARLIER, TINY_SYSTEMS


def test_every_system_is_profiled_and_reported(tmp_path, inputs, in_process):
    corpus, shared, _, _ = inputs
    script = training_profile
    out, report = tmp_path / "out", tmp_path / "QUALITY.md"
    report.write_text(EARLIER)
    argv = [
        "--data-dir", str(tmp_path / "data"), "--out", str(out), "--report", str(report),
        "--shared-data", str(shared), "--corpus-dir", str(corpus),
        "--fasttext-bin", str(FIXTURES_ROOT / "fasttext" / "tiny.bin"), "--fasttext-dim", "16",
        "--skip", "2", "--batches", "3", "--chunk-batches", "2",
        "--pretrain-overrides", json.dumps(TINY_SYSTEMS),
    ]  # fmt: skip
    script.main(argv)
    text = report.read_text()
    assert text.startswith(EARLIER)
    begin, end = script.markers(script.SECTION)
    section = text[text.index(begin) : text.index(end)]
    assert f"## {script.TITLE}\n" in section
    for system, (_, label) in script.quality_per_minute.SYSTEMS.items():
        result = json.loads((out / "profile" / system / "step_phases.json").read_text())
        assert result["batches"] == 3
        parts = {script.part_of(phase) for phase in result["mean_seconds"]}
        assert {"input embedder", "contextualizer", "output layer"} <= parts, system
        row = next(line for line in section.splitlines() if line.startswith(f"| {label} |"))
        shares = [float(cell.split("%")[0]) for cell in row.split(" | ")[-len(script.PARTS):]]
        assert abs(sum(shares) - 100) <= len(shares) / 2  # each rounded to a whole percent
    # Measured systems are kept: a second run only rewrites the section; other settings measure
    # again.
    script.main(argv)
    assert report.read_text() == text
    # The section names the commit and date each kept measurement was made at, not the
    # rendering's.
    assert f"measured at commit {script.quality_per_minute.current_commit()}, " in section
    for system in script.quality_per_minute.SYSTEMS:
        record = out / "profile" / f"{system}.measured.json"
        record.write_text(json.dumps({"commit": "abc1234", "date": "2026-01-01"}))
    script.main(argv)
    assert "measured at commit abc1234, 2026-01-01)" in report.read_text()
    first, (_, label) = next(iter(script.quality_per_minute.SYSTEMS.items()))
    (out / "profile" / f"{first}.measured.json").write_text(
        json.dumps({"commit": "def5678", "date": "2026-01-02"}))  # fmt: skip
    script.main(argv)
    assert f"measured at {label} at commit def5678, 2026-01-02, " in report.read_text()
    # Other settings measure again (shown on the first system: the same code keeps or measures
    # each system); the new measurement's stamp replaces the kept one.
    script.main(argv[:-2] + ["--batches", "2", "--pretrain-overrides", json.dumps(TINY_SYSTEMS),
                             "--systems", first])  # fmt: skip
    for system in script.quality_per_minute.SYSTEMS:
        measured = json.loads((out / "profile" / system / "step_phases.json").read_text())
        assert measured["batches"] == (2 if system == first else 3), system
    remeasured = report.read_text()
    assert "def5678" not in remeasured
    assert f"measured at commit {script.quality_per_minute.current_commit()}, " in remeasured
    # A run with the first settings again measures only the first system again (the others are
    # kept from their first run).
    script.main(argv)
    for system in script.quality_per_minute.SYSTEMS:
        assert json.loads((out / "profile" / system / "step_phases.json").read_text())["batches"] == 3
    assert "abc1234" in report.read_text() and "def5678" not in report.read_text()
    # A second section, for other vectors, beside the first: its own markers, heading and the
    # conditions it was measured under; the first stays as it was.
    first_section = report.read_text()
    script.main(argv + ["--section", "step-phases-other", "--title", "With other vectors",
                        "--conditions", "a screen on the other core"])  # fmt: skip
    text = report.read_text()
    assert text.startswith(first_section)
    begin, end = script.markers("step-phases-other")
    assert (begin, end) == ("<!-- report: step-phases-other -->", "<!-- /report -->")
    start = text.index(begin)
    other = text[start : text.index(end, start)]
    assert "## With other vectors\n" in other and "; a screen on the other core)" in other
