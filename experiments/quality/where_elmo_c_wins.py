"""
Where ELMo-C wins: the paper's setting at the scale of a 2-core machine. The biLMs pretrain on the
same 8M-token corpus as `quality_per_minute.py`, but their input (and, where a system has them,
their targets) are a **general fastText**: 300-d vectors with subwords trained on every English
text this project finds in registry packages, a superset of the pretraining corpus, as the
paper's Common Crawl vectors are of its 1B Word Benchmark.

    python -m experiments.quality.where_elmo_c_wins --data-dir data --out runs/wins \
        --shared-data ../shared/data --report experiments/quality/QUALITY.md

Steps (each one's result is a JSON file under OUT/steps/, as in `quality.py`; a finished step is
skipped, so the command runs in pieces, and several processes can share OUT):
1. `corpus`: the 8M-token pretraining corpus (`build-pretraining-corpus`, or `--corpus-dir`).
2. `general-corpus`: `DATA/general/{train,validation}.txt` from `general_sources()` (the
   pretraining corpus's sources and the others), with its manifest (package, version, registry,
   members, licence and counts per source).
3. `data-TASK`: each downstream task's data (`quality.py`'s data steps).
4. `contamination`: no test sentence of any downstream task may be in the general fastText's
   text. A test sentence is *found* in a line of the general corpus when its words (lower-cased
   runs of letters and digits, so that tokenization does not matter) occur there contiguously;
   sentences of fewer than `MIN_CHECKED_WORDS` words are counted but not looked for (a short
   sentence such as "thank you" occurs in any large text). Every line in which a test sentence
   is found is left out of the fastText text (OUT/general/fasttext_text.txt); the step records
   how many sentences of each task were found, and where. The text is the general corpus's
   training split: its validation split (which holds the pretraining corpus's) is never read.
   `contamination-check-TASKS` counts them again on the text as written, for every task asked
   for (a task added after the text was made shows there).
5. `general-fasttext`: 300-d skipgram vectors with subwords on that text
   (`train-fasttext`'s defaults otherwise).
6. `pretrain-SYSTEM`: each system of `SYSTEMS` at the demo encoder size, the general fastText
   as its input (and as its targets, or as FIXED's frozen output embedding), one thread, one
   run until its last budget of training time with an archive at each of `--minutes`:
   `quality_per_minute.pretrain_step`, the same runs as QUALITY.md's "Quality per minute".
   Start one process per core (`taskset`), each with its own `--systems`.
7. `screen-SYSTEM-MINUTES`: every snapshot through `probe_screen` (linear probes on frozen
   features, dev splits), and `screen-fasttext`, the general fastText alone.
8. `finalists`, once every system's last snapshot is screened, by a run that goes on to the
   downstream runs (not one with `--only`): the ELMo-C variant (a system
   without a vocabulary: `ELMO_C_VARIANTS`) with the best mean probe score over the screen's
   tasks at the last budget, ELMo-A, and the paper's cosine if it is not the best (the
   decision compares against it); `--finalists` names them instead.
9. `task-TASK-SYSTEM-MINUTESmin-seedN` and `task-TASK-fasttext-seedN`: the full downstream runs
   of `quality.py` for the finalists at `--finalist-minutes` and for fastText alone,
   `--ner-seeds` seeds for NER and `--seeds` for the others, selected on dev, test reported.
10. The report: a section of `--report` between its markers, with every finalist against the
   cosine downstream, the ELMo-C finalists against ELMo-A (reported, not part of the decision),
   the decision rule applied to each ELMo-C loss (`decision`), and the plot `--plot` (one panel
   per task family: the screen's probe scores against pretraining minutes; below it one per
   downstream task), and the downstream table as data, `--summary` (JSON: what the README and
   the docs quote, rendered by `python -m experiments.docs_numbers`).
"""

import argparse
import json
import logging
import re
from collections import defaultdict
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from allennlp_elmo_c.commands import probe_screen
from experiments.common.machine import machine
from experiments.common.seeds import mean_and_std, mean_std
from experiments.quality.arguments import add_arguments
from experiments.quality.pretraining import corpus_step
from experiments.quality.report import partial_note
from experiments.quality.steps import Steps, steps_command
from experiments.quality.systems import BILMS
from experiments.quality.tasks import BASELINE, BASELINE_LABEL, DATA_STEPS, TASKS, data_files
from experiments.quality import per_minute as quality_per_minute
from experiments.common.markers import markers, replace_section
from experiments.quality.report import downstream_difference

logger = logging.getLogger("where_elmo_c_wins")

GENERAL_DIR = "general"  # under DATA: the general corpus
FASTTEXT_DIM = 300
MIN_CHECKED_WORDS = 6
SYSTEMS = ("elmo_c_cosine", "elmo_a_whole", "elmo_c_in_batch", "elmo_fixed", "elmo_c_vmf")
SCREEN_TASKS = ("pos", "ner", "sst5", "sentiment", "stsb")
ELMO_C_VARIANTS = ("elmo_c_cosine", "elmo_c_in_batch", "elmo_c_vmf")
REFERENCE = "elmo_c_cosine"  # the paper's loss: the decision compares every other system with it
SOFTMAX = "elmo_a_whole"  # the softmax biLM every ELMo-C finalist is also compared with downstream
FAMILIES = {"syntactic": ("pos", "ner"), "semantic": ("sst5", "sentiment", "stsb")}
BEGIN, END = markers("wins")
BECOMES, STAYS, WAITS = "becomes the default", "stays an option", "waits for its downstream seeds"
_WORD = re.compile(r"[^\W_]+")


def general_sources():
    """The general corpus's sources: the pretraining corpus's, then every other English text
    found in registry packages (`sword_sources`, `extra_general_sources`)."""
    from experiments.corpora.general_sources import extra_general_sources
    from experiments.corpora.pretraining_sources import default_sources
    from experiments.corpora.sword_modules import sword_sources

    return default_sources() + sword_sources() + extra_general_sources()


def general_corpus_step(args) -> dict:
    from allennlp_elmo_c.common.build_cache import MANIFEST
    from experiments.corpora.pretraining_corpus import build_pretraining_corpus

    paths = build_pretraining_corpus(args.data_dir, general_sources(), output_dir=GENERAL_DIR)
    manifest = Path(paths["train"]).parent / MANIFEST
    tokens = sum(len(line.split()) for line in open(paths["train"], encoding="utf-8"))
    return {"train": str(paths["train"]), "validation": str(paths["validation"]),
            "manifest": str(manifest), "train_tokens": tokens}  # fmt: skip


def words(text: str) -> Tuple[str, ...]:
    """The lower-cased runs of letters and digits of `text`: the same for any tokenization."""
    return tuple(_WORD.findall(text.lower()))


def _conll_sentences(lines: Iterable[str]) -> Iterator[str]:
    """CoNLL-2003 lines: token first, a blank line between sentences."""
    sentence: List[str] = []
    for line in lines:
        if line.strip() and not line.startswith("-DOCSTART-"):
            sentence.append(line.split()[0])
        elif sentence:
            yield " ".join(sentence)
            sentence = []
    if sentence:
        yield " ".join(sentence)


def _tagged_sentences(lines: Iterable[str]) -> Iterator[str]:
    """word###tag tokens."""
    for line in lines:
        yield " ".join(token.rsplit("###", 1)[0] for token in line.split())


def _tree_sentences(lines: Iterable[str]) -> Iterator[str]:
    """PTB trees: the leaves."""
    for line in lines:
        yield " ".join(re.findall(r"\(\d+ ([^()\s]+)\)", line))


def _pair_sentences(lines: Iterable[str]) -> Iterator[str]:
    """Tab-separated band, sentence 1, sentence 2, score."""
    import csv

    for row in csv.reader(lines, delimiter="\t"):
        if row:
            yield row[1]
            yield row[2]


def _json_sentences(lines: Iterable[str]) -> Iterator[str]:
    """JSON lines with the text."""
    for line in lines:
        if line.strip():
            record = json.loads(line)
            yield record.get("text") or record.get("sentence") or ""


_TEST_SENTENCES = {"ner": _conll_sentences, "pos": _tagged_sentences, "sst5": _tree_sentences,
                   "stsb": _pair_sentences, "sentiment": _json_sentences}  # fmt: skip


def test_sentences(task: str, data: dict) -> Iterator[str]:
    """The text of each test sentence of a task's data step (its words separated by spaces)."""
    if task not in _TEST_SENTENCES:
        raise ValueError(f"no test-sentence reader for task {task!r}")
    with open(Path(data_files(data)["test"]), encoding="utf-8") as lines:
        yield from _TEST_SENTENCES[task](lines)


def find_sentences(
    sentences: Dict[str, Set[Tuple[str, ...]]], lines: Iterable[str], key_length: int
) -> Tuple[Set[int], Dict[str, Set[Tuple[str, ...]]]]:
    """
    Where the word sequences of `sentences` (`{task: {words}}`, each at least `key_length`
    words) occur contiguously in `lines`: returns the indices of the lines where one occurs, and
    `{task: the sequences found}`. Each sequence is looked up by its first `key_length` words
    (a hash lookup per position of each line), then compared whole.
    """
    by_key: Dict[Tuple[str, ...], List[Tuple[str, Tuple[str, ...]]]] = defaultdict(list)
    for task, found in sentences.items():
        for sequence in found:
            by_key[sequence[:key_length]].append((task, sequence))
    hits: Set[int] = set()
    found_by_task: Dict[str, Set[Tuple[str, ...]]] = defaultdict(set)
    for index, line in enumerate(lines):
        line_words = words(line)
        for start in range(len(line_words) - key_length + 1):
            candidates = by_key.get(line_words[start : start + key_length])
            if not candidates:
                continue
            for task, sequence in candidates:
                if line_words[start : start + len(sequence)] == sequence:
                    hits.add(index)
                    found_by_task[task].add(sequence)
    return hits, found_by_task


def contamination_step(args, general: dict, data: Dict[str, dict]) -> dict:
    from allennlp_elmo_c.common.atomic import atomic_open

    checked: Dict[str, Set[Tuple[str, ...]]] = {}
    counts: Dict[str, dict] = {}
    for task, task_data in data.items():
        all_words = [words(text) for text in test_sentences(task, task_data)]
        long_enough = {w for w in all_words if len(w) >= MIN_CHECKED_WORDS}
        checked[task] = long_enough
        counts[task] = {"test_sentences": len(all_words), "checked": len(long_enough),
                        "too_short": sum(1 for w in all_words if len(w) < MIN_CHECKED_WORDS)}  # fmt: skip
    text = args.out / GENERAL_DIR / "fasttext_text.txt"
    text.parent.mkdir(parents=True, exist_ok=True)
    with open(general["train"], encoding="utf-8") as source:
        lines = source.readlines()
    hits, found = find_sentences(checked, lines, MIN_CHECKED_WORDS)
    for task in counts:
        counts[task]["found"] = len(found.get(task, ()))
        counts[task]["examples"] = sorted(" ".join(w) for w in found.get(task, ()))[:5]
    with atomic_open(text) as output:
        output.writelines(line for index, line in enumerate(lines) if index not in hits)
    logger.info("contamination: %s; lines removed %d", counts, len(hits))
    return {"text": str(text), "lines_kept": len(lines) - len(hits), "lines_removed": len(hits),
            "per_task": counts, "min_checked_words": MIN_CHECKED_WORDS}  # fmt: skip


def contamination_check_step(args, contamination: dict, data: Dict[str, dict]) -> dict:
    """What the fastText text holds of every task's test sentences, counted on the text itself
    (a task added after the text was made is checked here too); nothing is removed."""
    sentences = {task: {w for w in map(words, test_sentences(task, task_data))
                        if len(w) >= MIN_CHECKED_WORDS} for task, task_data in data.items()}  # fmt: skip
    with open(contamination["text"], encoding="utf-8") as text:
        hits, found = find_sentences(sentences, text, MIN_CHECKED_WORDS)
    return {"lines": len(hits), "per_task": {
        task: {"checked": len(sentences[task]), "found": len(found.get(task, ())),
               "examples": sorted(" ".join(w) for w in found.get(task, ()))[:5]}
        for task in sentences}}  # fmt: skip


def general_fasttext_step(args, contamination: dict) -> dict:
    from allennlp_elmo_c.commands.train_fasttext import train_fasttext
    from experiments.demo.main import write_candidates

    target = args.out / "fasttext" / f"general.{FASTTEXT_DIM}d.bin"
    target.parent.mkdir(parents=True, exist_ok=True)
    vectors = train_fasttext(Path(contamination["text"]), target, dim=FASTTEXT_DIM,
                             threads=args.fasttext_threads, verbose=0)  # fmt: skip
    candidates = write_candidates(vectors, target.parent / "frequent_words.txt")
    return {"vectors": str(Path(vectors).resolve()), "candidates": str(candidates.resolve()),
            "dim": FASTTEXT_DIM}  # fmt: skip


def pretrain_steps(args, steps, corpus: dict, vectors: dict) -> Dict[str, dict]:
    """Each system's run (`quality_per_minute.pretrain_step`); `{system: result}` of those
    finished."""
    results = {}
    for system in args.systems:
        result = steps.run(f"pretrain-{system}",
                           lambda system=system: quality_per_minute.pretrain_step(args, system, corpus, vectors))  # fmt: skip
        if result is not None:
            results[system] = result
    return results


def screen_steps(args, steps, pretrained: Dict[str, dict], vectors: dict, data: Dict[str, dict]) -> Dict[str, dict]:  # fmt: skip
    """`{tag: probe results}` of each snapshot (tag `SYSTEM-MINUTESmin`) and of fastText alone
    (tag `fasttext`, from the first snapshot screened: every system reads the same .bin)."""
    tasks = {task: str(Path(data_files(data[task])["train"]).parent)
             for task in SCREEN_TASKS if task in data}  # fmt: skip
    loaded = {}
    screened = {}
    for system, result in pretrained.items():
        for minutes, record in result["budgets"].items():
            tag = f"{system}-{minutes}min"
            if steps.running_elsewhere(f"screen-{tag}"):
                continue

            def work(archive=record["archive"]):
                if not loaded:
                    loaded.update(probe_screen.load_data(tasks, {"pos": args.probe_pos_sentences}))
                found = probe_screen.screen_archive(archive, loaded, args, vectors["vectors"])
                return {"archive": archive, "seconds": found["seconds"], "tasks": found["tasks"],
                        "commit": quality_per_minute.current_commit()}  # fmt: skip

            screened[tag] = steps.run(f"screen-{tag}", work)
    for tag, result in screened.items():
        if result is not None:
            baseline = {task: {probe_screen.FASTTEXT: probes[probe_screen.FASTTEXT]}
                        for task, probes in result["tasks"].items()}  # fmt: skip
            screened[BASELINE] = steps.run(
                "screen-fasttext", lambda: {"from": tag, "tasks": baseline})
            break
    return {tag: result for tag, result in screened.items() if result is not None}


def screen_score(result: dict, tasks: Sequence[str], row: str = probe_screen.WITH_BILM) -> Optional[float]:
    """The mean probe score over `tasks` of one screen result (None if one is missing)."""
    scores = [result["tasks"].get(task, {}).get(row, {}).get("score") for task in tasks]
    return None if None in scores or not scores else sum(scores) / len(scores)


def finalists_step(args, screened: Dict[str, dict]) -> dict:
    last = f"{max(args.minutes):g}"
    scores = {system: screen_score(screened[f"{system}-{last}min"], SCREEN_TASKS)
              for system in ELMO_C_VARIANTS if f"{system}-{last}min" in screened}  # fmt: skip
    best = max(scores, key=lambda system: scores[system])
    systems = [best, SOFTMAX] + ([REFERENCE] if best != REFERENCE else [])
    return {"systems": systems, "best_variant": best, "screen_scores": scores, "budget": last}


def downstream_runs(args, pretrained: Dict[str, dict], finalists: Sequence[str]) -> List[tuple]:
    """`quality_per_minute.downstream_steps`'s runs: fastText alone, then each finalist at each
    of `--finalist-minutes`."""
    runs = [(BASELINE, None, {}, None)]
    for system in finalists:
        for minutes in args.finalist_minutes:
            record = pretrained[system]["budgets"][f"{minutes:g}"]
            runs.append((f"{system}-{minutes:g}min", record["archive"], {}, None))
    return runs


def downstream_table(args, steps, pretrained: Dict[str, dict], finalists: Optional[dict]) -> Optional[dict]:
    """The downstream runs finished so far, read once for the report and the plot: the finalists'
    `systems`; `rows`, one `(label, minutes, tag, pretraining record or None)` per table row
    (fastText alone first); and `scores`, each tag's `{task: {"dev": [...], "test": [...]}}`.
    None before the finalists."""
    from experiments.quality.per_minute import scores_of

    if not finalists or not all(s in pretrained for s in finalists["systems"]):
        return None
    seeds = downstream_seeds(args)
    rows = [(BASELINE_LABEL, "-", BASELINE, None)] + [
        (BILMS[s].label, f"{m:g}", f"{s}-{m:g}min", pretrained[s]["budgets"][f"{m:g}"])
        for s in finalists["systems"] for m in args.finalist_minutes]  # fmt: skip
    scores = {tag: {task: scores_of(steps, task, tag, seeds[task]) for task in args.downstream_tasks}
              for _, _, tag, _ in rows}  # fmt: skip
    return {"systems": list(finalists["systems"]), "rows": rows, "scores": scores}


def render(args, steps, pretrained: Dict[str, dict], screened: Dict[str, dict],
           finalists: Optional[dict], downstream: Optional[dict], command: str) -> str:  # fmt: skip
    """The report's Markdown section; `downstream` is `downstream_table`'s."""
    from experiments.quality.per_minute import recorded_commits, timeline_table

    general = steps.done("general-corpus") or {}
    contamination = steps.done("contamination") or {}
    corpus = steps.done("corpus") or {}
    lines = [BEGIN, "## Where ELMo-C wins: targets from a general fastText", "",
             f"Produced by `{command}` (see its docstring). Machine: {machine()}. One "
             "thread per pretraining run, each on its own core."]  # fmt: skip
    if general:
        lines += ["", f"The biLMs pretrain on the {corpus.get('train_tokens', 0):,}-token corpus of "
                  "the sections above; their input, and their targets where they have them, are "
                  f"300-d fastText vectors trained on {general['train_tokens']:,} tokens of English "
                  "from registry packages (the pretraining corpus and other sources: "
                  f"`{Path(general['manifest']).name}` of `build_pretraining_corpus`)."]  # fmt: skip
    if contamination:
        per_task = contamination["per_task"]
        found = ", ".join(f"{task} {c['found']} of {c['checked']}" for task, c in per_task.items())
        lines += ["", f"Test sentences of {contamination['min_checked_words']} words or more found "
                  f"in the general corpus: {found}; the {contamination['lines_removed']} lines that "
                  "hold them were left out of the fastText text."]  # fmt: skip
    check = steps.done("contamination-check-" + "-".join(sorted(args.tasks)))
    if check:
        found = ", ".join(f"{task} {c['found']} of {c['checked']}" for task, c in check["per_task"].items())
        held = "; ".join(f"{task}: " + ", ".join(f'"{e}"' for e in c["examples"])
                         for task, c in check["per_task"].items() if c["found"])  # fmt: skip
        lines += ["", f"Checked again on the text the fastText vectors were trained on: {found} "
                  f"({check['lines']} lines)" + (f"; it holds {held}." if held else ".")]  # fmt: skip
    labels = {task: TASKS[task][2] for task in SCREEN_TASKS}
    lines += ["", "### The screen: linear probes on frozen features (dev, %)", "",
              "| system | minutes | tokens seen | tokens/s | "
              + " | ".join(labels[t].replace(" acc.", "").replace(" F1", "") for t in SCREEN_TASKS)
              + " | mean |", "|---|---|---|---|" + "---|" * (len(SCREEN_TASKS) + 1)]  # fmt: skip

    def probe_cells(result: Optional[dict], row: str) -> str:
        cells = []
        for task in SCREEN_TASKS:
            probe = (result or {}).get("tasks", {}).get(task, {}).get(row)
            cells.append("-" if probe is None else f"{100 * probe['score']:.2f}")
        mean = screen_score(result, SCREEN_TASKS, row) if result else None
        return " | ".join(cells) + f" | {'-' if mean is None else f'{100 * mean:.2f}'}"

    baseline = screened.get(BASELINE)
    lines.append(f"| {BASELINE_LABEL} | - | - | - | {probe_cells(baseline, probe_screen.FASTTEXT)} |")
    for system, result in pretrained.items():
        for minutes, record in result["budgets"].items():
            lines.append(f"| {BILMS[system].label} | {minutes} | {speed_cells(record)} | "
                         f"{probe_cells(screened.get(f'{system}-{minutes}min'), probe_screen.WITH_BILM)} |")  # fmt: skip
    screen_against = screen_comparisons(pretrained, screened)
    lines += comparison_lines(screen_against)
    downstream_against: Dict[Tuple[str, str], Dict[str, Optional[dict]]] = {}
    if downstream:  # (None before the finalists)
        tasks = list(args.downstream_tasks)
        seeds = downstream_seeds(args)
        lines += ["", f"Finalists (best ELMo-C variant by the mean probe score at {finalists['budget']} "
                  f"minutes: {BILMS[finalists['best_variant']].label}): "
                  + ", ".join(BILMS[s].label for s in finalists["systems"]) + ".", "",
                  "### Downstream (test, mean ± std over seeds, each selected on dev)", "",
                  "| system | minutes | tokens seen | tokens/s | "
                  + " | ".join(TASKS[t][2] for t in tasks) + " |",
                  "|---|---|---|---|" + "---|" * len(tasks)]  # fmt: skip
        tags, scores = downstream["rows"], downstream["scores"]
        finished = sum(len(scores[tag][task]["test"]) for tag in scores for task in tasks)
        expected = len(tags) * sum(seeds[task] for task in tasks)
        lines[-2:-2] = partial_note(finished, expected)  # before the table's header
        for label, minutes, tag, record in tags:
            cells = [mean_std(scores[tag][task]["test"]) for task in tasks]
            speed = speed_cells(record) if record else "- | -"
            lines.append(f"| {label} | {minutes} | {speed} | " + " | ".join(cells) + " |")
        lines += ["", "Development scores (model selection only):", "",
                  "| system | minutes | " + " | ".join(TASKS[t][2] for t in tasks) + " |",
                  "|---|---|" + "---|" * len(tasks)]  # fmt: skip
        for label, minutes, tag, _ in tags:
            cells = [mean_std(scores[tag][task]["dev"]) for task in tasks]
            lines.append(f"| {label} | {minutes} | " + " | ".join(cells) + " |")
        downstream_against = downstream_comparisons(args, finalists["systems"], tasks, scores)
        lines += downstream_comparison_lines(args, downstream_against, tasks)
        lines += against_softmax_lines(args, finalists["systems"], tasks, scores)
    lines += decision_lines(args, pretrained, screen_against, downstream_against)
    if downstream:
        lines += ["", "Commits the downstream runs ran on: "
                  + recorded_commits(args.out / "runs" / quality_per_minute.DOWNSTREAM_COMMITS)]  # fmt: skip
    lines += ["", "Commits each pretraining ran on:", ""]
    for system in pretrained:
        lines.append(f"- {BILMS[system].label}: "
                     + recorded_commits(args.out / "runs" / f"pretrain-{system}.commits"))  # fmt: skip
    if pretrained:
        lines += ["", "Tokens/s over training time (per 10 minutes):", ""] + timeline_table(pretrained)
    lines += ["", f"![where ELMo-C wins]({args.plot.name})", END]
    return "\n".join(lines) + "\n"


def summary(args, downstream: dict, command: str) -> dict:
    """The downstream table as data, for the documents that quote it (`experiments.docs_numbers`
    renders their numbers from this): one row per system and budget, fastText alone first, with
    the pretraining's tokens seen and tokens/s and, per task and split, the mean and standard
    deviation of the seeds' scores in points, and their number."""
    rows = []
    for _, minutes, tag, record in downstream["rows"]:
        system = tag if record is None else tag.rsplit("-", 1)[0]
        cells = {}
        for split in ("test", "dev"):
            cells[split] = {}
            for task in args.downstream_tasks:
                values = downstream["scores"][tag][task][split]
                if values:
                    mean, std = mean_and_std(values)
                    cells[split][task] = {"mean": round(mean, 2), "std": round(std, 2), "n": len(values)}
        rows.append({
            "system": system,
            "minutes": None if record is None else float(minutes),
            "tokens_seen": None if record is None else record["tokens"],
            "tokens_per_second": None if record is None else round(record["tokens_per_second"]),
            **cells,
        })  # fmt: skip
    return {"command": command, "machine": machine(), "tasks": list(args.downstream_tasks),
            "rows": rows}  # fmt: skip


def speed_cells(record: dict) -> str:
    """The `tokens seen | tokens/s` cells of a pretraining budget's record."""
    return f"{record['tokens'] / 1e6:.2f}M | {record['tokens_per_second']:,.0f}"


def screen_comparisons(pretrained: Dict[str, dict], screened: Dict[str, dict]) -> Dict[Tuple[str, str], Dict[str, dict]]:  # fmt: skip
    """Every other system against the paper's cosine at each budget where both are screened:
    `{(system, minutes): {"all tasks" or a family: found}}`, `found` being the difference of the
    mean probe score over those tasks with its 95% paired-bootstrap interval over the development
    items (`probe_screen.paired_bootstrap`) and its `verdict`: "ahead" when the interval lies
    above zero, "behind" below it, "within the spread" otherwise."""
    compared = {}
    for system, result in pretrained.items():
        if system == REFERENCE or REFERENCE not in pretrained:
            continue
        for minutes in result["budgets"]:
            mine, theirs = screened.get(f"{system}-{minutes}min"), screened.get(f"{REFERENCE}-{minutes}min")
            if not mine or not theirs or any("items" not in mine["tasks"].get(t, {}).get(
                    probe_screen.WITH_BILM, {}) for t in SCREEN_TASKS):  # fmt: skip
                continue
            compared[system, minutes] = {}
            for name, tasks in (("all tasks", SCREEN_TASKS), *FAMILIES.items()):
                found = dict(probe_screen.paired_bootstrap(mine, theirs, tasks))
                found["verdict"] = ("ahead" if found["low"] > 0 else "behind" if found["high"] < 0
                                    else "within the spread")  # fmt: skip
                compared[system, minutes][name] = found
    return compared


def comparison_lines(compared: Dict[Tuple[str, str], Dict[str, dict]]) -> List[str]:
    """`screen_comparisons`'s table."""

    rows = []
    for (system, minutes), found in compared.items():
        cells = [f"{100 * f['difference']:+.2f} [{100 * f['low']:+.2f}, {100 * f['high']:+.2f}] "
                 f"{f['verdict']}" for f in found.values()]  # fmt: skip
        rows.append(f"| {BILMS[system].label} | {minutes} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return ["", f"Against {BILMS[REFERENCE].label} at the same budget: the difference of the mean "
            "probe score (points), its 95% interval from a paired bootstrap over the development "
            "items (1,000 resamples), and whether it lies beyond that spread:", "",
            "| system | minutes | all tasks | " + " | ".join(FAMILIES) + " |",
            "|---|---|" + "---|" * (1 + len(FAMILIES))] + rows  # fmt: skip


def screen_verdict(screen: Dict[Tuple[str, str], Dict[str, dict]], system: str, minutes: str) -> str:
    """`system` against the cosine on the screen's mean probe score at `minutes`: "ahead",
    "behind", "within the spread" (`screen_comparisons`), or "not screened"."""
    return screen.get((system, minutes), {}).get("all tasks", {}).get("verdict", "not screened")


def decision(budgets: Sequence[str], screen: Dict[Tuple[str, str], Dict[str, dict]],
             downstream: Dict[Tuple[str, str], Dict[str, Optional[dict]]], system: str) -> str:
    """What the decision rule says of one ELMo-C loss against the paper's cosine. It becomes the
    default only if, at every budget of `budgets`, its mean probe score over the screen's tasks
    leads the cosine's beyond the bootstrap interval (`screen_comparisons`) *and* downstream it
    leads beyond twice the standard error on at least one task and falls behind beyond it on none
    (`downstream_comparisons`; a loss that is not a finalist has no downstream runs). It waits
    while the screen says yes and downstream cells lack their seeds; it stays an option otherwise."""
    if not all(screen_verdict(screen, system, m) == "ahead" for m in budgets):
        return STAYS
    cells = [downstream.get((system, m)) for m in budgets]
    if not all(cells):
        return STAYS  # not a finalist
    found = [f for cell in cells for f in cell.values()]
    if any(f is not None and f["verdict"] == "behind" for f in found):
        return STAYS
    if None in found:
        return WAITS
    ahead = all(any(f["verdict"] == "ahead" for f in cell.values()) for cell in cells)
    return BECOMES if ahead else STAYS


def decision_lines(args, pretrained: Dict[str, dict], screen: Dict[Tuple[str, str], Dict[str, dict]],
                   downstream: Dict[Tuple[str, str], Dict[str, Optional[dict]]]) -> List[str]:  # fmt: skip
    """The decision rule applied to every ELMo-C loss other than the cosine, what it reads for
    each, and the default pretraining loss that follows."""

    budgets = [f"{m:g}" for m in args.finalist_minutes]
    variants = [s for s in ELMO_C_VARIANTS if s != REFERENCE and s in pretrained]
    if REFERENCE not in pretrained or not variants:
        return []
    said, chosen = [], []
    for system in variants:
        screened = ", ".join(f"{screen_verdict(screen, system, m)} at {m} min" for m in budgets)
        cells = [f for m in budgets for f in (downstream.get((system, m)) or {}).values()]
        if cells:
            verdicts = [f["verdict"] for f in cells if f is not None]
            missing = cells.count(None)
            below = (f"downstream ahead in {verdicts.count('ahead')} and behind in "
                     f"{verdicts.count('behind')} of {len(cells)} task-budget cells"
                     + (f", {missing} of them without two seeds yet" if missing else ""))  # fmt: skip
        else:
            below = "not a finalist: no downstream runs"
        outcome = decision(budgets, screen, downstream, system)
        chosen += [system] if outcome == BECOMES else []
        said.append(f"- {BILMS[system].label}: the screen {screened}; {below}. It **{outcome}**.")
    default = chosen[0] if len(chosen) == 1 else REFERENCE
    return ["", f"Decision. A loss replaces {BILMS[REFERENCE].label} as the default pretraining loss "
            f"only if, at {' and '.join(budgets)} minutes, it leads it beyond the spread on the "
            "screen's mean probe score and, downstream, on at least one task while falling behind "
            "on none:", "", *said, "",
            f"The default pretraining loss: {BILMS[default].label}"
            + (" (more than one loss qualifies: choose between them by hand)." if len(chosen) > 1 else ".")]  # fmt: skip


def downstream_comparisons(args, systems: Sequence[str], tasks: Sequence[str],
                           scores: Dict[str, Dict[str, dict]],
                           reference: str = REFERENCE) -> Dict[Tuple[str, str], Dict[str, Optional[dict]]]:  # fmt: skip
    """Every one of `systems` but `reference` (by default the paper's cosine) against `reference`
    at each budget, per task: `{(system, minutes): {task: downstream_difference or None}}`;
    `scores` holds each run tag's `{task: {"dev": [...], "test": [...]}}`. Empty when `reference`
    is not among `systems`."""
    if reference not in systems:
        return {}
    return {(system, f"{minutes:g}"): {task: downstream_difference(
                scores[f"{system}-{minutes:g}min"][task]["test"],
                scores[f"{reference}-{minutes:g}min"][task]["test"]) for task in tasks}
            for system in systems if system != reference for minutes in args.finalist_minutes}  # fmt: skip


def downstream_comparison_lines(args, compared: Dict[Tuple[str, str], Dict[str, Optional[dict]]],
                                tasks: Sequence[str], reference: str = REFERENCE) -> List[str]:  # fmt: skip
    """`downstream_comparisons`'s table against `reference`: the difference of the mean test
    scores (points) and twice its standard error."""

    if not compared:
        return []
    rows = []
    for (system, minutes), found in compared.items():
        cells = ["-" if f is None else f"{100 * f['difference']:+.2f} (± {100 * f['spread']:.2f}) {f['verdict']}"
                 for f in found.values()]  # fmt: skip
        rows.append(f"| {BILMS[system].label} | {minutes} | " + " | ".join(cells) + " |")
    return ["", f"Against {BILMS[reference].label} downstream at the same budget: the difference of "
            "the mean test scores (points), twice its standard error over the seeds (± sqrt(s1^2 / "
            "n1 + s2^2 / n2) x 2), and whether it lies beyond that spread:", "",
            "| system | minutes | " + " | ".join(TASKS[t][2] for t in tasks) + " |",
            "|---|---|" + "---|" * len(tasks)] + rows  # fmt: skip


def against_softmax_lines(args, systems: Sequence[str], tasks: Sequence[str],
                          scores: Dict[str, Dict[str, dict]]) -> List[str]:  # fmt: skip
    """The ELMo-C finalists against ELMo-A downstream (`downstream_comparison_lines`), reported
    whatever it shows and not part of the decision; nothing when ELMo-A is not a finalist
    (`downstream_comparisons` is empty then)."""
    compared = downstream_comparisons(args, [s for s in systems if s in ELMO_C_VARIANTS or s == SOFTMAX],
                                      tasks, scores, reference=SOFTMAX)  # fmt: skip
    return downstream_comparison_lines(args, compared, tasks, reference=SOFTMAX)


def plot(args, pretrained: Dict[str, dict], screened: Dict[str, dict], downstream: Optional[dict],
         path: Path) -> None:  # fmt: skip
    """The screen, one panel per task family: the mean probe score of its tasks against minutes.
    Below it, once there are finalists, the downstream runs, one panel per task: each finalist's
    mean test score over its seeds at each budget (bars: their standard deviation), fastText
    alone as a dashed line (its band: the same)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    colors = {system: f"C{i}" for i, system in enumerate(pretrained)}  # one color per system throughout
    tasks = list(args.downstream_tasks) if downstream else []
    width = max(len(FAMILIES) * 5, len(tasks) * 3.2)
    figure = plt.figure(figsize=(width, 8 if tasks else 4), layout="constrained")
    top, bottom = figure.subfigures(2, 1) if tasks else (figure, None)
    for axis, (family, family_tasks) in zip(top.subplots(1, len(FAMILIES)), FAMILIES.items()):
        for system, result in pretrained.items():
            points = [(float(m), screen_score(screened[f"{system}-{m}min"], family_tasks))
                      for m in result["budgets"] if f"{system}-{m}min" in screened]  # fmt: skip
            points = [(x, y) for x, y in points if y is not None]
            if points:
                axis.plot([x for x, _ in points], [100 * y for _, y in points], marker="o",
                          color=colors[system], label=BILMS[system].label)  # fmt: skip
        floor = screened.get(BASELINE)
        if floor and screen_score(floor, family_tasks, probe_screen.FASTTEXT) is not None:
            axis.axhline(100 * screen_score(floor, family_tasks, probe_screen.FASTTEXT), color="grey",
                         linestyle="--", label=BASELINE_LABEL)  # fmt: skip
        axis.set_title(f"{family}: " + ", ".join(family_tasks))
        axis.set_xlabel("pretraining minutes (one CPU core)")
        axis.set_ylabel("mean probe score (dev, %)")
        axis.legend(fontsize=7)
    if tasks:
        top.suptitle("The screen: linear probes on frozen features")
        bottom.suptitle("Downstream: the finalists and fastText alone")
        axes = bottom.subplots(1, len(tasks), squeeze=False)[0]
        dodge = 0.02 * (max(args.finalist_minutes) - min(args.finalist_minutes) or 1)  # apart at one x
        for index, (axis, task) in enumerate(zip(axes, tasks)):
            for rank, system in enumerate(downstream["systems"]):
                shift = (rank - (len(downstream["systems"]) - 1) / 2) * dodge
                points = [(m + shift, downstream["scores"][f"{system}-{m:g}min"][task]["test"])
                          for m in args.finalist_minutes]  # fmt: skip
                points = [(x, values) for x, values in points if values]
                if points:
                    means, stds = zip(*(mean_and_std(values) for _, values in points))
                    axis.errorbar([x for x, _ in points], means, yerr=stds, marker="o", capsize=3,
                                  color=colors.get(system), label=BILMS[system].label)  # fmt: skip
            alone = downstream["scores"][BASELINE][task]["test"]
            if alone:
                mean, std = mean_and_std(alone)
                axis.axhline(mean, color="grey", linestyle="--", label=BASELINE_LABEL)
                axis.axhspan(mean - std, mean + std, color="grey", alpha=0.15)
            family = next((f for f, members in FAMILIES.items() if task in members), "")
            name, metric = TASKS[task][2].rsplit(" ", 1)
            axis.set_title(f"{name}\n({family})", fontsize=8)
            axis.set_xlabel("pretraining minutes")
            axis.set_xlim(min(args.finalist_minutes) - 10 * dodge, max(args.finalist_minutes) + 10 * dodge)
            axis.set_ylabel(f"test {metric} (mean ± std over seeds)", fontsize=8)
            axis.set_xticks(list(args.finalist_minutes))
            if index == 0:
                axis.legend(fontsize=6)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def downstream_seeds(args) -> Dict[str, int]:
    return {task: args.ner_seeds if task == "ner" else args.seeds for task in args.downstream_tasks}


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    add_arguments(parser, "--data-dir", "--out", "--shared-data", "--corpus-dir", "--brown-source",
                  "--sentiment-dir", "--sentiment-source", helps=False, out=Path("runs/wins"))
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    add_arguments(parser, "--stsb-source", helps=False)
    parser.add_argument("--tasks", default="ner,pos,sst5,sentiment,stsb")
    parser.add_argument("--minutes", default="10,30,60")
    add_arguments(parser, "--pos-train-sentences", "--sst5-subtrees", helps=False)
    parser.add_argument("--fasttext-threads", type=int, default=2)
    parser.add_argument("--fasttext-bin", default=None,
                        help="use these vectors instead of training the general fastText")  # fmt: skip
    add_arguments(parser, "--fasttext-dim", fasttext_dim=FASTTEXT_DIM)
    parser.add_argument("--pretrain-overrides", default="{}", help="JSON: dotted keys for every "
                        "system, or a system's name -> its own")  # fmt: skip
    parser.add_argument("--only", default=None, help="stop after: fasttext, pretrain, screen")
    parser.add_argument("--finalists", default=None, help="comma-separated systems (default: "
                        "chosen by the screen)")  # fmt: skip
    parser.add_argument("--finalist-minutes", default="10,60")
    parser.add_argument("--downstream-tasks", default=None, help="default: --tasks")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--ner-seeds", type=int, default=5)
    parser.add_argument("--task-epochs", type=int, default=15)
    parser.add_argument("--task-patience", type=int, default=4)
    parser.add_argument("--task-overrides", default="{}")
    add_arguments(parser, "--keep-task-runs", "--report")
    parser.add_argument("--plot", type=Path, default=None, help="default OUT/where_elmo_c_wins.png")
    parser.add_argument("--summary", type=Path, default=None,
                        help="the downstream table as JSON; default OUT/where_elmo_c_wins.json")  # fmt: skip
    parser.add_argument("--report-only", action="store_true", help="run nothing: the report and "
                        "plot from the steps finished so far")  # fmt: skip
    probe_screen.add_probe_arguments(parser)
    args = parser.parse_args(argv)
    args.systems = [s for s in args.systems.split(",") if s]
    args.tasks = [t for t in args.tasks.split(",") if t]
    args.minutes = sorted(float(m) for m in args.minutes.split(",") if m)
    args.finalist_minutes = sorted(float(m) for m in args.finalist_minutes.split(",") if m)
    args.downstream_tasks = [t for t in (args.downstream_tasks or ",".join(args.tasks)).split(",") if t]
    if args.finalists:
        args.finalists = [s for s in args.finalists.split(",") if s]
    unknown = [t for t in args.tasks + args.downstream_tasks if t not in TASKS]
    unknown += [s for s in args.finalists or () if s not in quality_per_minute.SYSTEMS]
    unknown += [f"{m:g} minutes" for m in args.finalist_minutes if m not in args.minutes]
    unknown += [s for s in args.systems if s not in quality_per_minute.SYSTEMS]
    if unknown:
        parser.error(f"unknown task or system: {unknown}")
    args.out, args.data_dir = args.out.resolve(), args.data_dir.resolve()
    args.report = args.report or args.out / "QUALITY.md"
    args.plot = args.plot or args.out / "where_elmo_c_wins.png"
    args.summary = args.summary or args.out / "where_elmo_c_wins.json"
    return args


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
    steps = Steps(args.out)
    if args.report_only:
        steps.run = lambda name, work: steps.done(name)  # what is finished, None for the rest
    corpus = steps.run("corpus", lambda: corpus_step(args))
    data = {task: steps.run(f"data-{task}", lambda task=task: DATA_STEPS[task](args))
            for task in args.tasks}  # fmt: skip
    if args.fasttext_bin:
        vectors = {"vectors": str(Path(args.fasttext_bin).resolve())}
    else:
        general = steps.run("general-corpus", lambda: general_corpus_step(args))
        contamination = steps.run("contamination", lambda: contamination_step(args, general, data))
        vectors = steps.run("general-fasttext", lambda: general_fasttext_step(args, contamination))
        names = "-".join(sorted(data))
        steps.run(f"contamination-check-{names}",
                  lambda: contamination_check_step(args, contamination, data))  # fmt: skip
    if args.only == "fasttext":
        return
    pretrained = pretrain_steps(args, steps, corpus, vectors)
    if args.only == "pretrain":
        return
    screened = screen_steps(args, steps, pretrained, vectors, data)
    last = f"{max(args.minutes):g}"
    variants = [s for s in ELMO_C_VARIANTS if s in args.systems]
    finalists = steps.done("finalists")
    if args.finalists:
        finalists = {"systems": args.finalists, "best_variant": args.finalists[0],
                     "budget": last, "named": True}  # fmt: skip
    elif finalists is None and args.only is None and SOFTMAX in pretrained and variants and all(
        f"{s}-{last}min" in screened for s in variants
    ):  # (a run stopping at the screen may cover only some systems: it chooses nothing)
        finalists = steps.run("finalists", lambda: finalists_step(args, screened))
    if args.only != "screen" and finalists and all(s in pretrained for s in finalists["systems"]):
        runs = downstream_runs(args, pretrained, finalists["systems"])
        quality_per_minute.downstream_steps(args, steps, runs, downstream_seeds(args), data, vectors)
    command = steps_command("experiments.quality.where_elmo_c_wins", argv)
    downstream = downstream_table(args, steps, pretrained, finalists)
    section = render(args, steps, pretrained, screened, finalists, downstream, command)
    replace_section(args.report, BEGIN, END, section)
    if downstream:
        args.summary.write_text(json.dumps(summary(args, downstream, command), indent=1) + "\n")
    plot(args, pretrained, screened, downstream, args.plot)
    print(args.report.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
