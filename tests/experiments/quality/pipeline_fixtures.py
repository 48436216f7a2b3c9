"""
The fixture data of the quality pipelines' end-to-end tests (`write_inputs`), the sizes they
pretrain at, and the arguments `experiments/quality/per_minute.py` runs with in the session's
shared run of pretrained systems (the `pretrained_systems` fixture of this folder's conftest.py).
"""

import json
import shutil
from pathlib import Path
from typing import List, NamedTuple

from tests import FIXTURES_ROOT
from tests.experiments.corpora.pretraining_fixtures import PRETRAINING_FIXTURES, tarball

LM_DATA = FIXTURES_ROOT / "data" / "lm"
TASK_DATA = FIXTURES_ROOT / "data"

IOB2 = """# newdoc id = doc{n}
# sent_id = doc{n}-0001
1\tAlice\tB-PER\t-\t-
2\tvisited\tO\t-\t-
3\tNew\tB-LOC\t-\t-
4\tYork\tI-LOC\t-\t-
5\t.\tO\t-\t-

# sent_id = doc{n}-0002
1\tThe\tO\t-\t-
2\tcouncil\tB-ORG\t-\t-
3\tmet\tO\t-\t-

"""


class Inputs(NamedTuple):
    corpus: Path  # train.txt, validation.txt
    shared: Path  # uner_ewt/ (NER), sst5/ (SST-5), as --shared-data
    brown: Path  # the Brown package (POS)
    sentiment: Path  # the demo's sentiment data


def inputs_in(root: Path) -> Inputs:
    """The paths of the inputs `write_inputs` writes under `root`."""
    return Inputs(root / "corpus", root / "shared", root / "brown.tgz", root / "sentiment")


def write_inputs(root: Path) -> Inputs:
    """The pipelines' inputs at fixture size, under `root`."""
    corpus = root / "corpus"
    corpus.mkdir(parents=True)
    shutil.copy(LM_DATA / "sentences.txt", corpus / "train.txt")
    shutil.copy(LM_DATA / "dev.txt", corpus / "validation.txt")
    ner = root / "shared" / "uner_ewt"
    ner.mkdir(parents=True)
    (ner / "dev.iob2").write_text("".join(IOB2.format(n=n) for n in range(12)))
    (ner / "test.iob2").write_text(IOB2.format(n=99))
    brown = {f"package/{p.name}": p.read_bytes() for p in (PRETRAINING_FIXTURES / "brown").iterdir()}
    brown["package/cn01"] = brown["package/cl01"]  # a development genre
    # SST-5 (PTB trees) and the demo's sentiment data (jsonl), the same fixture as every split.
    (root / "shared" / "sst5").mkdir()
    sentiment = root / "sentiment"
    sentiment.mkdir()
    for split in ("train", "dev", "test"):
        shutil.copy(TASK_DATA / "sst5.txt", root / "shared" / "sst5" / f"{split}.txt")
        shutil.copy(TASK_DATA / "sentiment.jsonl", sentiment / f"{split}.jsonl")
    # Whole sentences only: the fixture's four trees are labelled 0, 1, 3, 4; a neutral one too.
    with open(root / "shared" / "sst5" / "train.txt", "a") as train:
        train.write("(2 (2 It) (2 (2 opens) (2 (2 on) (2 Friday))) (2 .))\n")
    tarball(root / "brown.tgz", brown)
    return inputs_in(root)


# Every system at fixture size (`--pretrain-overrides`).
TINY_SYSTEMS = {
    "model.contextualizer.projection_size": 4, "model.contextualizer.cell_size": 8,
    "data_loader.batch_size": 4,
    "elmo_a_whole": {"vocabulary.min_count.lm_targets": 1, "model.output_head.cutoffs": [20]},
    "allennlp_lm": {"model.num_samples": 10, "vocabulary.min_count.tokens": 1,
                    "model.contextualizer.input_size": 4,
                    "model.text_field_embedder.token_embedders.token_characters.encoder."
                    "projection_dim": 4},
}  # fmt: skip
# ... for pretraining to time budgets: two batches an epoch (a budget is checked at an epoch's
# end), and the frozen-output system's own sizes.
TINY_BUDGETED = {
    **TINY_SYSTEMS,
    "data_loader.batches_per_epoch": 2,
    "elmo_fixed": {"vocabulary.min_count.lm_targets": 1, "model.output_head.num_samples": 5},
}
MINUTES = "0.0002,0.0004"
# What the session's shared run pretrains: every system of per_minute.py (its default three,
# and the others where_elmo_c_wins.py compares).
ALL_SYSTEMS = ("elmo_c_cosine", "elmo_a_whole", "allennlp_lm", "elmo_c_vmf", "elmo_c_in_batch",
               "elmo_fixed")  # fmt: skip
EARLIER = "# Quality\n\nEarlier tables.\n"  # a report the scripts add their sections to


def per_minute_argv(root: Path, out: Path, inputs: Inputs) -> List[str]:
    """per_minute.py's arguments at fixture size: its pretraining to `MINUTES` (each system at
    `TINY_BUDGETED`), evaluation, and one seed of POS downstream, in `out`; its report and plot
    under `root`."""
    return [
        "--data-dir", str(root / "data"), "--out", str(out), "--report", str(root / "QUALITY.md"),
        "--plot", str(root / "plot.png"), "--shared-data", str(inputs.shared),
        "--corpus-dir", str(inputs.corpus), "--brown-source", str(inputs.brown),
        "--fasttext-bin", str(FIXTURES_ROOT / "fasttext" / "tiny.bin"), "--fasttext-dim", "16",
        "--minutes", MINUTES, "--seeds", "1", "--task-epochs", "1", "--tasks", "pos",
        "--pretrain-overrides", json.dumps(TINY_BUDGETED),
    ]  # fmt: skip


def copy_run(out: Path, target: Path) -> Path:
    """A copy of the shared run's `out` at `target`, for a test that adds to it or changes it
    (the step results it copies still name the shared run's archives, which nobody changes)."""
    shutil.copytree(out, target, symlinks=True)
    return target


def replace_arguments(argv: List[str], old: Path, new: Path) -> List[str]:
    """`argv` with every path under `old` moved under `new` (the same layout there)."""
    return [argument.replace(str(old), str(new)) for argument in argv]
