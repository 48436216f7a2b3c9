"""`experiments/quality/per_minute.py` end to end at fixture size: plumbing and report only."""
import json

import pytest

from experiments.quality import per_minute
from tests.experiments.quality.pipeline_fixtures import EARLIER, copy_run, replace_arguments


def load_script():
    return per_minute


def test_every_system_pretrains_to_each_budget_evaluates_and_tags(
    tmp_path, pretrained_systems, in_process
):
    """The session's shared run (`pretrained_systems`: the script from nothing, every step run)
    pretrained each system to each budget, evaluated each snapshot and trained POS on it; on a
    copy of it (paths under this test's directory), a run finds every step done and renders the
    report the run from nothing rendered, a second run only rewrites it, `--report-only` shows an
    unfinished step, and a later start runs it."""
    script = load_script()
    shared = pretrained_systems
    out = copy_run(shared.out, tmp_path / "out")
    report, plot = tmp_path / "QUALITY.md", tmp_path / "plot.png"
    report.write_text(EARLIER)
    argv = replace_arguments(shared.argv, shared.root, tmp_path)
    script.main(argv)
    text = report.read_text()
    assert text == (shared.root / "QUALITY.md").read_text().replace(str(shared.root), str(tmp_path))
    assert text.startswith(EARLIER)
    section = text[text.index(script.BEGIN) : text.index(script.END)]
    for system in script.DEFAULT_SYSTEMS:
        label = script.SYSTEMS[system][1]
        rows = [line for line in section.splitlines() if line.startswith(f"| {label} | 0.000")]
        assert len(rows) == 2, system  # one row per budget
        assert all(row.count("(n=1)") == 1 for row in rows)  # POS (NER runs as quality.py's)
        result = json.loads((out / "steps" / f"pretrain-{system}.json").read_text())
        assert set(result["budgets"]) == {"0.0002", "0.0004"}
        first, second = result["budgets"]["0.0002"], result["budgets"]["0.0004"]
        assert 0 < first["tokens"] <= second["tokens"]
        assert second["training_seconds"] >= 60 * 0.0004
        assert json.loads((out / "steps" / f"eval-{system}-0.0004min.json").read_text())["loss"] > 0
    assert "fastText only (no context)" in section and plot.is_file()
    assert (shared.root / "plot.png").is_file()
    # Each system's pretraining names the commit it ran on.
    assert "Commits each pretraining ran on:" in section
    assert section.count(", started ") == len(quality_per_minute_systems(section)) + 1
    # ... and the downstream runs too, once per start of them.
    downstream = out / "runs" / "downstream.commits"
    start = downstream.read_text().strip()
    assert ", started " in start and f"Commits the downstream runs ran on: {start}\n" in section
    # The peer's downstream runs embed with allennlp-models' own token embedder.
    peer_pos = json.loads((out / "steps" / "task-pos-allennlp_lm-0.0002min-seed1.json").read_text())
    assert 0.0 <= peer_pos["test"] <= 1.0
    # A second run does nothing but rewrite the section in place.
    script.main(argv)
    assert report.read_text() == text and "**Partial:**" not in text
    # --report-only runs nothing: an unfinished run is left out of its row's mean (n=0 shows "-").
    (out / "steps" / "task-pos-allennlp_lm-0.0002min-seed1.json").unlink()
    script.main(argv + ["--report-only"])
    assert not (out / "steps" / "task-pos-allennlp_lm-0.0002min-seed1.json").exists()
    label = script.SYSTEMS["allennlp_lm"][1]
    row = next(line for line in report.read_text().splitlines()
               if line.startswith(f"| {label} | 0.0002"))  # fmt: skip
    assert row.endswith("| - |") and "(n=1)" not in row
    assert "**Partial:** 6 of the 7 downstream runs have finished" in report.read_text()
    assert "--report-only" not in report.read_text()
    assert downstream.read_text().strip() == start  # finished or --report-only: nothing started
    # A later start runs the missing step and is named as a resumption.
    script.main(argv)
    starts = downstream.read_text().strip().splitlines()
    assert starts[0] == start and len(starts) == 2 and ", resumed " in starts[1]
    assert "**Partial:**" not in report.read_text() and "; ".join(starts) in report.read_text()
    assert json.loads((out / "steps" / "task-pos-allennlp_lm-0.0002min-seed1.json").read_text())


def quality_per_minute_systems(section: str):
    """The systems listed under the report's commits."""
    part = section.split("Commits each pretraining ran on:", 1)[1].split("Tokens/s over", 1)[0]
    return [line for line in part.splitlines() if line.startswith("- ")]


def test_a_slowed_ten_minutes_is_named_in_the_timeline():
    script = per_minute
    # 6,000 tokens/s, but 5,000 in 10-20 min (17% below the median) and 5,800 in 20-30 (3%).
    rates = [6000, 5000, 5800, 6000, 6000, 6000]
    points, tokens = [], 0
    for index, rate in enumerate(rates):
        for step in range(1, 11):
            tokens += rate * 60
            points.append([600 * index + 60 * step, tokens])
    assert script.rates_per_10_minutes(points) == pytest.approx(rates)
    lines = script.timeline_table({"elmo_c_cosine": {"timeline": points}})
    assert lines[2].endswith("| 6,000 | 5,000 | 5,800 | 6,000 | 6,000 | 6,000 |")
    assert lines[-1] == ("Rates more than 5% below their run's median (budgets to run again): "
                         "ELMo-C (continuous, cosine) 10-20 min (5,000 against a median of 6,000).")  # fmt: skip
    assert script.rates_per_10_minutes(points[:3])[1:] == [None] * 5
