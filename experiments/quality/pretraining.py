"""
`quality.py`'s pretraining: the corpus and fastText steps, and one biLM per system and budget
(`pretrain_step`), all over the same corpus and vectors.
"""

import json
from pathlib import Path
from typing import Dict

from experiments.quality.steps import BATCH, TRAINING_CONFIG, WINDOW, allennlp_train
from experiments.quality.systems import BILMS, OVERRIDES, System

# The systems `pretrain_step` trains (Table 2's).
SYSTEMS: Dict[str, System] = {
    name: BILMS[name] for name in ("elmo_c_cosine", "elmo_c_vmf", "elmo_a")
}


def corpus_step(args) -> dict:
    if args.corpus_dir:
        directory = Path(args.corpus_dir).resolve()
    else:
        from experiments.corpora.pretraining_corpus import build_pretraining_corpus

        directory = Path(build_pretraining_corpus(args.data_dir)["train"]).parent.resolve()
    train, validation = directory / "train.txt", directory / "validation.txt"
    if not validation.is_file() and (directory / "dev.txt").is_file():
        validation = directory / "dev.txt"  # the demo corpus's name
    for path in (train, validation):
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing")
    tokens = sum(len(line.split()) for line in open(train, encoding="utf-8"))
    return {"train": str(train), "validation": str(validation), "train_tokens": tokens}


def fasttext_step(args, corpus: dict) -> dict:
    from allennlp_elmo_c.commands.train_fasttext import train_fasttext
    from experiments.demo.main import write_candidates

    target = args.out / "fasttext" / f"vectors.{args.fasttext_dim}d.bin"
    if args.fasttext_bin:
        vectors = Path(args.fasttext_bin).resolve()
        target.parent.mkdir(parents=True, exist_ok=True)
    else:
        vectors = train_fasttext(
            Path(corpus["train"]), target, dim=args.fasttext_dim, threads=args.threads
        )
    candidates = write_candidates(vectors, target.parent / "frequent_words.txt")
    return {"vectors": str(vectors.resolve()), "candidates": str(candidates.resolve())}


def pretrain_overrides(args, corpus: dict, vectors: dict, batches: int) -> dict:
    warmup = max(1, min(200, batches // 10))
    return {
        "train_data_path": corpus["train"],
        "validation_data_path": corpus["validation"],
        "dataset_reader.token_indexers.tokens.model_path": vectors["vectors"],
        "model.text_field_embedder.token_embedders.tokens.model_path": vectors["vectors"],
        "model.text_field_embedder.token_embedders.tokens.expected_dim": args.fasttext_dim,
        "model.contextualizer.input_size": args.fasttext_dim,
        "data_loader.batches_per_epoch": batches,
        "trainer.num_epochs": 1,
        # The demo schedule, stretched over this run: warm-up, hold, decay to half by the end.
        "trainer.learning_rate_scheduler.warmup_steps": warmup,
        "trainer.learning_rate_scheduler.decay_start": max(warmup, int(0.4 * batches)),
        "trainer.learning_rate_scheduler.decay_end": max(warmup + 1, batches),
    }


def pretrain_step(args, system: str, batches: int, corpus: dict, vectors: dict) -> dict:
    from experiments.common.duration import training_seconds

    config = SYSTEMS[system].config
    overrides = pretrain_overrides(args, corpus, vectors, batches)
    if system.startswith("elmo_c"):
        overrides["model.nearest_neighbour_words"] = vectors["candidates"]
    overrides.update(OVERRIDES.get(system, {}))
    overrides.update(json.loads(args.pretrain_overrides))
    run = args.out / "runs" / f"pretrain-{system}-{batches}"
    metrics = allennlp_train(
        TRAINING_CONFIG / config, run, overrides, {"ELMO_C_DATA_DIR": str(args.data_dir)},
        args.threads,
    )  # fmt: skip
    duration = training_seconds(metrics["training_duration"])
    archive = run / "model.tar.gz"
    tokens = batches * BATCH * WINDOW
    return {
        "archive": str(archive.resolve()),
        "batches": batches,
        "tokens": tokens,
        "training_seconds": duration,
        "tokens_per_second": tokens / duration,
        "trainable_parameters": trainable_parameters(archive),
        "validation": {
            key[len("best_validation_") :]: value
            for key, value in metrics.items()
            if key.startswith("best_validation_")
        },
    }


def trainable_parameters(archive: Path) -> int:
    from allennlp.models.archival import load_archive

    import allennlp_elmo_c  # noqa: F401  (registers the archive's components)

    model = load_archive(str(archive)).model
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
