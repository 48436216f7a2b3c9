"""
Flair's character language models for `flair_comparison.py`: the corpus folder Flair's
`LanguageModelTrainer` reads (`flair_corpus_step`), and one direction's training to budgets of
CPU time, with a snapshot of the model at each (`train_direction`).

The trainer is Flair's own, with its defaults (SGD at learning rate 20, gradient clipping 0.25,
the learning rate annealed on the validation loss of each split); what this module adds is the
clock: `BudgetClock` counts the CPU time of the training batches (forward, backward, update,
and Flair's reading of each split), leaves out Flair's validation and sample generation at each
split's end, writes `budget-<minutes>min.pt` when a budget is passed and ends the training
after the last one the way Flair's trainer knows (`KeyboardInterrupt`: "Exiting from training
early", after which it evaluates the test file and returns).
"""

import collections
import json
import time
from pathlib import Path
from typing import Callable, Dict, List

from allennlp_elmo_c.common.atomic import atomic_open

CHARACTER_MIN_COUNT = 2  # characters seen fewer times in the training text are Flair's <unk>


def split_lines(lines: List[str], parts: int) -> List[List[str]]:
    """`lines` in `parts` consecutive runs of (nearly) equal length, none empty."""
    parts = max(1, min(parts, len(lines)))
    size, extra = divmod(len(lines), parts)
    runs, start = [], 0
    for part in range(parts):
        end = start + size + (1 if part < extra else 0)
        runs.append(lines[start:end])
        start = end
    return runs


def first_characters(lines: List[str], characters: int) -> List[str]:
    """The first lines of `lines` that hold about `characters` characters (at least one line)."""
    kept, count = [], 0
    for line in lines:
        kept.append(line)
        count += len(line) + 1
        if count >= characters:
            break
    return kept


def flair_corpus_step(out: Path, corpus: dict, splits: int, valid_characters: int) -> dict:
    """
    The folder `LanguageModelTrainer` reads, under OUT/flair_corpus: `train/` (the corpus's
    training text in `splits` files, in its order; Flair validates after each), `valid.txt`
    (about `valid_characters` characters of the corpus's validation split), `test.txt` (the
    first fifth of those), and `characters.pkl`: Flair's character `Dictionary` of the training
    text (characters seen at least `CHARACTER_MIN_COUNT` times; the rest read as `<unk>`).
    """
    from allennlp_elmo_c.integrations.flair import flair  # noqa: F401  (Flair, imported safely)
    from flair.data import Dictionary

    directory = out / "flair_corpus"
    (directory / "train").mkdir(parents=True, exist_ok=True)
    lines = Path(corpus["train"]).read_text(encoding="utf-8").splitlines()
    for number, part in enumerate(split_lines(lines, splits), 1):
        (directory / "train" / f"train_split_{number}").write_text("\n".join(part) + "\n", encoding="utf-8")
    validation = Path(corpus["validation"]).read_text(encoding="utf-8").splitlines()
    valid = first_characters(validation, valid_characters)
    (directory / "valid.txt").write_text("\n".join(valid) + "\n", encoding="utf-8")
    test = first_characters(valid, valid_characters // 5)
    (directory / "test.txt").write_text("\n".join(test) + "\n", encoding="utf-8")
    counts = collections.Counter()
    for line in lines:
        counts.update(line + "\n")
    dictionary = Dictionary(add_unk=True)
    for character, count in counts.most_common():
        if count >= CHARACTER_MIN_COUNT:
            dictionary.add_item(character)
    dictionary.save(str(directory / "characters.pkl"))
    characters = sum(counts.values())
    words = sum(len(line.split()) for line in lines)
    return {
        "dir": str(directory.resolve()), "dictionary": str((directory / "characters.pkl").resolve()),
        "splits": len(list((directory / "train").iterdir())), "characters": characters,
        "words": words, "characters_per_word": characters / max(words, 1),
        "dictionary_size": len(dictionary),
    }  # fmt: skip


class BudgetClock:
    """
    The CPU time (`time.process_time`) of a Flair language model's training batches: installed
    over the model's `forward` and `generate_text` and the trainer's `evaluate` (`install`), it
    starts at the first training batch, leaves out evaluation and generation, counts the
    characters of every training batch, calls `snapshot(seconds_budget)` once each budget (in
    seconds) is passed, and after the last one raises `KeyboardInterrupt`, which ends Flair's
    training loop.
    """

    def __init__(self, budgets: List[float], snapshot: Callable[[float, "BudgetClock"], None],
                 clock: Callable[[], float] = time.process_time) -> None:  # fmt: skip
        self.budgets = sorted(budgets)
        self.snapshot = snapshot
        self.clock = clock
        self.seconds = 0.0
        self.characters = 0
        self.batches = 0
        self.saved: List[float] = []
        self._start = None

    def _excluded(self, function: Callable) -> Callable:
        def run(*arguments, **keywords):
            began = self.clock()
            try:
                return function(*arguments, **keywords)
            finally:
                if self._start is not None:
                    self._start += self.clock() - began  # not training time

        return run

    def install(self, model, trainer) -> None:
        forward = model.forward

        def counted_forward(data, hidden, *arguments, **keywords):
            if model.training:
                self.tick(int(data.numel()))
            return forward(data, hidden, *arguments, **keywords)

        model.forward = counted_forward
        model.generate_text = self._excluded(model.generate_text)
        trainer.evaluate = self._excluded(trainer.evaluate)

    def tick(self, characters: int) -> None:
        """Before a training batch of `characters` characters: passed budgets are written; the
        batch is counted, unless every budget is passed (then the training stops)."""
        now = self.clock()
        if self._start is None:
            self._start = now
        self.seconds = now - self._start
        for budget in self.budgets:
            if budget not in self.saved and self.seconds >= budget:
                began = self.clock()
                self.snapshot(budget, self)
                self.saved.append(budget)
                self._start += self.clock() - began  # the snapshot is not training time
        if len(self.saved) == len(self.budgets):
            raise KeyboardInterrupt("every CPU-time budget passed")
        self.characters += characters
        self.batches += 1


def train_direction(flair_corpus: dict, run: Path, hidden: int, forward: bool, seed: int,
                    minutes: List[float], settings: dict) -> Dict[str, dict]:  # fmt: skip
    """
    One direction of a Flair character LM (`hidden` units, 1 layer, as Flair's documentation
    trains them) on the corpus folder of `flair_corpus_step`, until each of `minutes` of CPU
    time; `settings`: `sequence_length`, `mini_batch_size` (and any other keyword of
    `LanguageModelTrainer.train`). Returns {minutes: the snapshot's record: its `.pt` file (for
    `FlairEmbeddings`), CPU seconds, characters and batches trained, the trainer's best validation
    loss so far}.
    """
    from allennlp_elmo_c.integrations.flair import flair
    from flair.data import Dictionary
    from flair.models import LanguageModel
    from flair.trainers.language_model_trainer import LanguageModelTrainer, TextCorpus

    flair.set_seed(seed)
    dictionary = Dictionary.load_from_file(flair_corpus["dictionary"])
    corpus = TextCorpus(flair_corpus["dir"], dictionary, forward, character_level=True)
    model = LanguageModel(dictionary, forward, hidden_size=hidden, nlayers=1)
    trainer = LanguageModelTrainer(model, corpus)
    records: Dict[str, dict] = {}

    def snapshot(budget: float, clock: BudgetClock) -> None:
        name = f"budget-{budget / 60:g}min"
        model.save(run / f"{name}.pt")
        records[f"{budget / 60:g}"] = {
            "model": str((run / f"{name}.pt").resolve()), "cpu_seconds": clock.seconds,
            "characters": clock.characters, "batches": clock.batches,
            "characters_per_second": clock.characters / max(clock.seconds, 1e-9),
        }  # fmt: skip
        with atomic_open(run / f"{name}.json") as stream:
            stream.write(json.dumps(records[f"{budget / 60:g}"], indent=1))

    clock = BudgetClock([60 * m for m in minutes], snapshot)
    clock.install(model, trainer)
    run.mkdir(parents=True, exist_ok=True)
    arguments = {"max_epochs": 10**6, "num_workers": 0, "checkpoint": False, **settings}
    trainer.train(run, **arguments)
    if len(records) < len(minutes):
        raise RuntimeError(f"Flair's training in {run} ended before its last budget")
    return records
