"""`experiments/docs_numbers.py`: every numbers block of README.md and docs/ is what its data
renders, and a change to the data or to a block is caught; the data files extracted from
QUALITY.md's tables agree with them, so that the report stays the record and the JSON its data."""
import json
import re
from typing import Dict, List

import pytest

from experiments import docs_numbers
from experiments.common.markers import markers


def test_every_block_agrees_with_its_data():
    assert docs_numbers.disagreements() == []


def test_every_block_named_in_the_documents_exists_and_the_readme_has_the_results():
    names = set()
    for document in docs_numbers.DOCUMENTS:
        text = (docs_numbers.PROJECT / document).read_text(encoding="utf-8")
        names |= {found.group(1) for found in docs_numbers.BLOCK.finditer(text)}
        assert text.count("<!-- numbers:") == text.count("<!-- /numbers -->"), document
    assert names <= set(docs_numbers.BLOCKS)
    readme = (docs_numbers.PROJECT / "README.md").read_text(encoding="utf-8")
    assert {"readme-results", "demo-result", "demo-machine"} <= {
        found.group(1) for found in docs_numbers.BLOCK.finditer(readme)}


def test_a_changed_number_in_the_data_is_a_disagreement(tmp_path, monkeypatch):
    data = json.loads(docs_numbers.WINS.read_text())
    row = next(r for r in data["rows"] if r["system"] == "elmo_c_in_batch" and r["minutes"] == 60)
    row["test"]["ner"]["mean"] += 1.0
    changed = tmp_path / "wins.json"
    changed.write_text(json.dumps(data))
    monkeypatch.setattr(docs_numbers, "WINS", changed)
    assert "README.md: readme-results" in docs_numbers.disagreements()


def test_a_number_edited_by_hand_is_a_disagreement(tmp_path, monkeypatch):
    readme = (docs_numbers.PROJECT / "README.md").read_text(encoding="utf-8")
    block = "<!-- numbers: demo-machine -->"
    start = readme.index(block) + len(block)
    edited = readme[:start] + "4" + readme[start + 1 :]
    (tmp_path / "README.md").write_text(edited, encoding="utf-8")
    monkeypatch.setattr(docs_numbers, "PROJECT", tmp_path)
    assert docs_numbers.disagreements(["README.md"]) == ["README.md: demo-machine"]


def test_the_verdicts_are_twice_the_standard_error_written_out():
    # +0.12 against a spread of 2 sqrt(0.03^2 / 3 + 0.03^2 / 3) = 0.049: ahead.
    mine, theirs = {"mean": 95.93, "std": 0.03, "n": 3}, {"mean": 95.81, "std": 0.03, "n": 3}
    found, spread = docs_numbers.difference(mine, theirs)
    assert found == pytest.approx(0.12) and spread == pytest.approx(0.04899, abs=1e-5)
    assert docs_numbers.verdict(mine, theirs) == "ahead"
    assert docs_numbers.verdict(theirs, mine) == "behind"
    assert docs_numbers.verdict(mine, dict(theirs, std=0.3)) == "within"


def test_a_changed_number_in_the_screen_data_is_a_disagreement(tmp_path, monkeypatch):
    data = json.loads(docs_numbers.SCREEN.read_text())
    entry = next(e for e in data["against_reference"] if e["system"] == "elmo_c_vmf")
    entry["all tasks"]["verdict"] = "behind"
    changed = tmp_path / "screen.json"
    changed.write_text(json.dumps(data))
    monkeypatch.setattr(docs_numbers, "SCREEN", changed)
    found = docs_numbers.disagreements(["docs/choosing-a-bilm.md"])
    assert {"docs/choosing-a-bilm.md: screen-table", "docs/choosing-a-bilm.md: screen-beyond-interval",
            "docs/choosing-a-bilm.md: losses-table"} <= set(found)  # fmt: skip


def test_a_changed_cpu_time_in_the_data_is_a_disagreement(tmp_path, monkeypatch):
    data = json.loads(docs_numbers.AVX2_CPU.read_text())
    assert data["source"] and data["machine"]["vector_units"]  # where the numbers come from
    data["rows"][0]["seconds"][1] += 0.1
    changed = tmp_path / "cpu.json"
    changed.write_text(json.dumps(data))
    monkeypatch.setattr(docs_numbers, "AVX2_CPU", changed)
    assert docs_numbers.disagreements(["docs/pretraining.md"]) == ["docs/pretraining.md: avx2-cpu"]
    assert docs_numbers.disagreements(["README.md"]) == ["README.md: avx2-demo-update"]


def test_every_block_is_used_by_a_document():
    used = set()
    for document in docs_numbers.DOCUMENTS:
        text = (docs_numbers.PROJECT / document).read_text(encoding="utf-8")
        used |= {found.group(1) for found in docs_numbers.BLOCK.finditer(text)}
    assert set(docs_numbers.BLOCKS) - used == set()


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


# --- the data and QUALITY.md's section "Where ELMo-C wins", whose tables it was extracted from ------

QUALITY = docs_numbers.PROJECT / "experiments" / "quality" / "QUALITY.md"
LABELS = {"fastText only (no context)": "fasttext", "ELMo-C (continuous, cosine)": "elmo_c_cosine",
          "ELMo-C (continuous, in-batch softmax)": "elmo_c_in_batch",
          "ELMo-C (continuous, vMF)": "elmo_c_vmf",
          "ELMo-A (adaptive softmax, whole vocabulary)": "elmo_a_whole",
          "FIXED (sampled softmax, frozen fastText outputs)": "elmo_fixed"}  # fmt: skip
COLUMNS = {"NER (UNER EWT)": "ner", "POS (Brown, held-out genres)": "pos",
           "SST-5 (fine-grained)": "sst5", "Sentiment (demo, RT)": "sentiment",
           "STS-B (3 similarity bands)": "stsb", "mean": "mean"}  # fmt: skip
SCORE = re.compile(r"^(\d+\.\d+) ± (\d+\.\d+) \(n=(\d+)\)$")
DOWNSTREAM = re.compile(r"^([+-]\d+\.\d+) \(± (\d+\.\d+)\) (ahead|behind|within the spread)$")
INTERVAL = re.compile(r"^([+-]\d+\.\d+) \[([+-]\d+\.\d+), ([+-]\d+\.\d+)\] (ahead|behind|within the spread)$")


def wins_section() -> str:
    text = QUALITY.read_text(encoding="utf-8")
    begin, end = markers("wins")
    start = text.index(begin)
    return text[start : text.index(end, start)]


def table_after(text: str, caption: str) -> List[Dict[str, str]]:
    """The rows of the first table after `caption`, each {column: cell}."""
    lines = text[text.index(caption) :].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        table.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return [dict(zip(table[0], row)) for row in table[2:]]


def task(column: str) -> str:
    return COLUMNS[re.sub(r" (F1|acc\.)$", "", column)]


def minutes(cell: str):
    return None if cell == "-" else float(cell)


def verdict(word: str) -> str:
    return "within" if word == "within the spread" else word


def test_the_downstream_data_is_the_reports_tables():
    data = docs_numbers.load(docs_numbers.WINS)
    section = wins_section()
    test = table_after(section, "### Downstream (test")
    dev = table_after(section[section.index("### Downstream (test") :], "Development scores")
    assert len(test) == len(dev) == len(data["rows"])
    for row, scores, development in zip(data["rows"], test, dev):
        assert (LABELS[scores["system"]], minutes(scores["minutes"])) == (row["system"], row["minutes"])
        assert (LABELS[development["system"]], minutes(development["minutes"])) == (row["system"], row["minutes"])  # fmt: skip
        if row["minutes"] is not None:
            assert float(scores["tokens seen"].rstrip("M")) == round(row["tokens_seen"] / 1e6, 2)
            assert int(scores["tokens/s"].replace(",", "")) == row["tokens_per_second"]
        for split, table_row in (("test", scores), ("dev", development)):
            for column, cell in table_row.items():
                if column in ("system", "minutes", "tokens seen", "tokens/s"):
                    continue
                mean, std, n = SCORE.match(cell).groups()
                assert row[split][task(column)] == {"mean": float(mean), "std": float(std), "n": int(n)}


@pytest.mark.parametrize("other,caption", [
    ("elmo_c_cosine", "Against ELMo-C (continuous, cosine) downstream"),
    ("elmo_a_whole", "Against ELMo-A (adaptive softmax, whole vocabulary) downstream"),
])  # fmt: skip
def test_the_rendered_verdicts_are_the_reports(other, caption):
    """The verdicts rendered from the rounded means and deviations are the report's, from the seeds'
    scores; the differences agree to the rounding."""
    data = docs_numbers.load(docs_numbers.WINS)
    compared = 0
    for table_row in table_after(wins_section(), caption):
        mine = docs_numbers.row_of(data, LABELS[table_row["system"]], minutes(table_row["minutes"]))
        theirs = docs_numbers.row_of(data, other, mine["minutes"])
        for column, cell in table_row.items():
            if column in ("system", "minutes"):
                continue
            found, spread = docs_numbers.difference(docs_numbers.cell(mine, task(column)),
                                                    docs_numbers.cell(theirs, task(column)))  # fmt: skip
            reported, reported_spread, word = DOWNSTREAM.match(cell).groups()
            assert found == pytest.approx(float(reported), abs=0.0101), (table_row["system"], column)
            assert spread == pytest.approx(float(reported_spread), abs=0.03), (table_row["system"], column)
            assert docs_numbers.verdict(docs_numbers.cell(mine, task(column)),
                                        docs_numbers.cell(theirs, task(column))) == verdict(word)  # fmt: skip
            compared += 1
    assert compared == 20


def test_the_screen_data_is_the_reports_tables():
    data = docs_numbers.load(docs_numbers.SCREEN)
    section = wins_section()
    screen = table_after(section, "### The screen")
    assert len(screen) == len(data["rows"])
    for row, table_row in zip(data["rows"], screen):
        assert (LABELS[table_row["system"]], minutes(table_row["minutes"])) == (row["system"], row["minutes"])  # fmt: skip
        if row["minutes"] is not None:
            assert float(table_row["tokens seen"].rstrip("M")) == round(row["tokens_seen"] / 1e6, 2)
            assert int(table_row["tokens/s"].replace(",", "")) == row["tokens_per_second"]
        assert row["dev"] == {task(c): float(v) for c, v in table_row.items() if c in COLUMNS}
    against = table_after(section, "Against ELMo-C (continuous, cosine) at the same budget")
    assert len(against) == len(data["against_reference"])
    for entry, table_row in zip(data["against_reference"], against):
        assert (LABELS[table_row["system"]], float(table_row["minutes"])) == (entry["system"], entry["minutes"])  # fmt: skip
        for family in ("all tasks", *data["families"]):
            difference, low, high, word = INTERVAL.match(table_row[family]).groups()
            assert entry[family] == {"difference": float(difference), "low": float(low),
                                     "high": float(high), "verdict": verdict(word)}  # fmt: skip


def test_the_two_data_files_agree_on_the_pretraining_runs():
    wins, screen = docs_numbers.load(docs_numbers.WINS), docs_numbers.load(docs_numbers.SCREEN)
    assert set(wins["tasks"]) == set(screen["tasks"])
    for row in wins["rows"]:
        (same,) = [r for r in screen["rows"] if (r["system"], r["minutes"]) == (row["system"], row["minutes"])]
        assert (same["tokens_seen"], same["tokens_per_second"]) == (row["tokens_seen"], row["tokens_per_second"])


@pytest.mark.parametrize("which", range(len(docs_numbers.FLAIR_TASKS)))
def test_a_changed_score_in_a_later_flair_comparison_is_a_disagreement(which, tmp_path, monkeypatch):
    guide = "docs/choosing-a-bilm.md"  # the one page that quotes the Flair comparisons
    assert docs_numbers.disagreements([guide]) == []
    files = list(docs_numbers.FLAIR_TASKS)
    data = json.loads(files[which].read_text())
    (budget,) = data["cells"]["elmo_c_in_batch"]
    for task in data["tasks"]:  # (each task's number is quoted: any change is caught)
        data["cells"]["elmo_c_in_batch"][budget][task]["test"][0] -= 0.05
    files[which] = tmp_path / "flair_tasks.json"
    files[which].write_text(json.dumps(data))
    monkeypatch.setattr(docs_numbers, "FLAIR_TASKS", tuple(files))
    assert docs_numbers.disagreements([guide]) == [f"{guide}: flair-tasks-lead"]


def test_the_later_flair_comparisons_say_how_often_each_system_read_the_corpus(tmp_path, monkeypatch):
    data = json.loads(docs_numbers.FLAIR_TASKS[0].read_text())
    for entry in data["pretraining"]:
        entry["words_per_direction"] = [2.5 * data["corpus"]["train_tokens"] if entry["system"] == "elmo_c_in_batch"
                                        else 0.5 * data["corpus"]["train_tokens"]] * 2  # fmt: skip
    changed = tmp_path / "flair_tasks.json"
    changed.write_text(json.dumps(data))
    monkeypatch.setattr(docs_numbers, "FLAIR_TASKS", (changed,))
    assert "(ELMo-C read the corpus 2.5 times per direction, Flair 0.5)" in docs_numbers.flair_tasks_lead()


def test_a_later_flair_comparison_on_another_corpus_is_quoted_apart_with_its_corpus(tmp_path, monkeypatch):
    data = json.loads(docs_numbers.FLAIR_TASKS[0].read_text())
    other = dict(data, corpus=dict(data["corpus"], train_tokens=4 * data["corpus"]["train_tokens"]))
    files = [tmp_path / "demo.json", tmp_path / "other.json"]
    for path, found in zip(files, (data, other)):
        path.write_text(json.dumps(found))
    monkeypatch.setattr(docs_numbers, "FLAIR_TASKS", tuple(files))
    lead = docs_numbers.flair_tasks_lead()
    (budget,) = data["cells"]["elmo_c_in_batch"]
    tokens = data["corpus"]["train_tokens"]
    # Each corpus is named once, before its budgets; the same budget on the two is not merged.
    assert lead.startswith(f"{tokens:,}-token corpus, {budget} CPU-minutes (")
    assert f"; {4 * tokens:,}-token corpus, {budget} CPU-minutes (" in lead
    assert lead.count(f"{budget} CPU-minutes (ELMo-C read the corpus ") == 2


def test_the_larger_corpus_claim_of_the_flair_comparisons_is_true_of_their_data():
    # choosing-a-bilm: on the larger corpus ELMo-C reread far less of it in 30
    # CPU-minutes, and the NER gap to Flair was not wider than on the demo corpus.
    at_30 = {}
    for data in map(docs_numbers.load, docs_numbers.FLAIR_TASKS):
        if 30 in data["minutes"]:
            ((_, system, mine, theirs),) = [p for p in docs_numbers.against_flair(data, "ner") if p[0] == "30"]
            at_30[data["corpus"]["train_tokens"]] = (docs_numbers.corpus_passes(data)[(system, "30")],
                                                     docs_numbers.difference(mine, theirs)[0])  # fmt: skip
    assert len(at_30) == 2
    (small, small_gap), (large, large_gap) = (at_30[tokens] for tokens in sorted(at_30))
    assert large < small / 2 and large_gap <= small_gap
    text = (docs_numbers.PROJECT / "docs" / "choosing-a-bilm.md").read_text()
    assert "the NER gap was not wider there than on the demo corpus" in text
