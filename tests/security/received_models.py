"""
Crafted received models for the tests of `tests/security/` that feed a received config to every
front door: a model directory or biLM archive whose config a sender edited (the directory's
`checksums.sha256` regenerated, as a sender would), Python that would leave a marker file if it
ran, a local listener that records any fetch, and the front doors themselves.
"""

import contextlib
import http.server
import io
import json
import shutil
import sys
import tarfile
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from allennlp.commands import main
from allennlp.common.checks import ConfigurationError

from tests import FIXTURES_ROOT

LM_DEV = FIXTURES_ROOT / "data" / "lm" / "dev.txt"
SENTIMENT = FIXTURES_ROOT / "data" / "sentiment.jsonl"


def craft_directory(source: Path, target: Path, edit: Callable[[Dict[str, Any]], None]) -> Path:
    """A copy of the model directory `source` whose config.json `edit` changed in place, with its
    checksums regenerated (as a sender would)."""
    from allennlp_elmo_c.received.model_directory import write_checksums

    shutil.copytree(source, target)
    lock = target / "vocabulary" / ".lock"
    if lock.exists():
        lock.unlink()
    config = json.loads((target / "config.json").read_text())
    edit(config)
    (target / "config.json").write_text(json.dumps(config, indent=2))
    write_checksums(target)
    return target


def craft_archive(
    source: Path,
    target: Path,
    edit: Optional[Callable[[Dict[str, Any]], None]] = None,
    text: Optional[str] = None,
) -> Path:
    """A copy of the archive `source` whose config.json `edit` changed, or is `text`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(source) as original, tarfile.open(target, "w:gz") as copy:
        for member in original:
            data = original.extractfile(member) if member.isfile() else None
            if member.name == "config.json":
                if text is None:
                    config = json.load(data)  # type: ignore[arg-type]
                    edit(config)  # type: ignore[misc]
                    body = json.dumps(config).encode()
                else:
                    body = text.encode()
                member.size = len(body)
                data = io.BytesIO(body)
            copy.addfile(member, data)
    return target


# The tiny classifier with a component of this plugin (a second embedding of each word, by the
# plugin's `word_hash` indexer and `random_vectors` embedder): an ELMo-C model, which the
# received-model checks are for (any other archive is AllenNLP's to load).
ELMO_C_COMPONENTS = {
    "dataset_reader.token_indexers": {"tokens": {"type": "single_id"}, "hashes": {"type": "word_hash"}},
    "model.text_field_embedder.token_embedders.hashes": {"type": "random_vectors", "embedding_dim": 4},
    "model.seq2vec_encoder.embedding_dim": 8,
}


def train_task_archive(directory: Path) -> Path:
    """A tiny AllenNLP classifier with a component of this plugin (`ELMO_C_COMPONENTS`) trained
    for one epoch in `directory`: its `model.tar.gz`, an ELMo-C task archive."""
    from allennlp.commands.train import train_model
    from allennlp.common import Params

    params = Params.from_file(
        str(FIXTURES_ROOT / "configs" / "tiny_classifier.jsonnet"),
        json.dumps({
            "train_data_path": str(SENTIMENT),
            "validation_data_path": str(SENTIMENT),
            "trainer.learning_rate_scheduler": None,
            **ELMO_C_COMPONENTS,
        }),
    )  # fmt: skip
    train_model(params, directory / "run")
    return directory / "run" / "model.tar.gz"


def write_remote_code(directory: Path, marker: Path) -> Path:
    """A Hugging Face tokenizer directory whose `auto_map` names Python shipped in it; importing
    that Python (what `trust_remote_code` does) creates `marker`."""
    directory.mkdir(parents=True)
    (directory / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "MarkerTokenizer",
        "auto_map": {"AutoTokenizer": ["marker_tokenizer.MarkerTokenizer", None]},
    }))  # fmt: skip
    (directory / "config.json").write_text(json.dumps({"model_type": "bert"}))
    (directory / "marker_tokenizer.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "from transformers import PreTrainedTokenizer\n\n\n"
        "class MarkerTokenizer(PreTrainedTokenizer):\n"
        "    pass\n"
    )
    return directory


def bilm_node(config: Dict[str, Any], directory: bool) -> Dict[str, Any]:
    """The biLM's AllenNLP config in a model directory's (`bilm`) or an archive's config.json."""
    return config["bilm"] if directory else config


@contextlib.contextmanager
def listener() -> Iterator[Tuple[str, List[str]]]:
    """A local HTTP server on 127.0.0.1: `(base URL, paths requested)`; every request gets 404."""
    requests: List[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the base class's name)
            requests.append(self.path)
            self.send_error(404)

        do_HEAD = do_GET  # noqa: N815

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()


def redirect_hf_modules(tmp_path: Path, monkeypatch) -> Path:
    """Where Hugging Face would copy remote code it imports: a folder of the test (it must stay
    absent), instead of the user's cache."""
    import transformers.dynamic_module_utils as dynamic

    modules = tmp_path / "hf_modules"
    monkeypatch.setattr(dynamic, "HF_MODULES_CACHE", str(modules))
    return modules


def refusal(call: Callable[[], Any], capsys=None) -> str:
    """The message of the refusal `call` ends with: a `ConfigurationError`, or the error line a
    command printed before exiting (with `capsys`). Any other error is returned as its type and
    message (which names no key: the caller checks what the call did first, then the message)."""
    try:
        call()
    except ConfigurationError as error:
        return str(error)
    except SystemExit as exit_:
        assert exit_.code not in (0, None), "the command exited successfully"
        assert capsys is not None, "the command exited without a ConfigurationError"
        return capsys.readouterr().err
    except Exception as error:  # noqa: BLE001 (what an unrefused model's loading raised)
        return f"not refused: {type(error).__name__}: {error}"
    return "not refused: the received model was loaded"


def allennlp(monkeypatch, *argv: str) -> None:
    """`allennlp ARGV...` in-process, the plugin loaded (`--include-package` for AllenNLP's own
    commands, which take it)."""
    plugin = ["--include-package", "allennlp_elmo_c"] if argv[0] in ("predict", "evaluate") else []
    monkeypatch.setattr(sys, "argv", ["allennlp", *argv, *plugin])
    main(prog="allennlp")


def front_doors(model: Path, work: Path, monkeypatch, directory: bool) -> Dict[str, Callable[[], Any]]:
    """Every way a received biLM (a model directory, or a `model.tar.gz`) is loaded, each a
    call that loads it and uses it on a sentence."""
    import spacy

    import allennlp_elmo_c
    from allennlp_elmo_c.modules.elmo_c import PretrainedBiLM
    from allennlp_elmo_c.commands.describe import describe_archive
    from allennlp_elmo_c.commands.package import package_model

    work.mkdir(parents=True, exist_ok=True)
    sentences = work / "sentences.txt"
    sentences.write_text("The council met on Friday .\n")
    inputs = work / "inputs.jsonl"
    inputs.write_text(json.dumps({"sentence": "The council met"}) + "\n")

    def spacy_component():
        nlp = spacy.blank("en")
        nlp.add_pipe("elmo_c", config={"model": str(model)})
        return nlp("The council met")

    def flair_embeddings():
        from allennlp_elmo_c.integrations.flair import ElmoCEmbeddings  # first: see _import_flair
        from flair.data import Sentence

        return ElmoCEmbeddings(str(model)).embed(Sentence(["The", "council", "met"]))

    doors: Dict[str, Callable[[], Any]] = {
        "PretrainedBiLM.from_archive": lambda: PretrainedBiLM.from_archive(str(model)),
        "ElmoC": lambda: allennlp_elmo_c.ElmoC(str(model), 1),
        "ElmoCEmbedder": lambda: allennlp_elmo_c.ElmoCEmbedder(str(model)).embed_sentence(["The", "council"]),
        "elmo-c-embed": lambda: allennlp(
            monkeypatch, "elmo-c-embed", str(model), str(sentences), str(work / "out.hdf5")
        ),
        "allennlp predict": lambda: allennlp(
            monkeypatch, "predict", str(model), str(inputs), "--predictor", "elmo_c_next_word",
            "--output-file", str(work / "predictions.jsonl"), "--silent",
        ),
        "allennlp evaluate": lambda: allennlp(
            monkeypatch, "evaluate", str(model), str(LM_DEV), "--output-file", str(work / "metrics.json")
        ),
        "spaCy component": spacy_component,
        "Flair": flair_embeddings,
        "package": lambda: package_model(str(model), str(work / "packaged")),
        "describe": lambda: describe_archive(str(model)),
    }  # fmt: skip
    if directory:
        from transformers import AutoModel, AutoTokenizer

        doors["AutoModel"] = lambda: AutoModel.from_pretrained(str(model))
        doors["AutoTokenizer"] = lambda: AutoTokenizer.from_pretrained(str(model))
        doors["spacy.load"] = lambda: spacy.load(spacy_pipeline(model, work / "pipeline"))("The council met")
    return doors


def task_archive_doors(archive: Path, work: Path, monkeypatch) -> Dict[str, Callable[[], Any]]:
    """The ways a received task archive (the classifier of `train_task_archive`) is loaded:
    `allennlp predict` on a sentence, `allennlp evaluate` on the sentiment fixture, and
    AllenNLP's `load_archive`."""
    from allennlp.models.archival import load_archive

    work.mkdir(parents=True, exist_ok=True)
    inputs = work / "inputs.jsonl"
    inputs.write_text(json.dumps({"sentence": "A small movie ."}) + "\n")
    return {
        "allennlp predict": lambda: allennlp(monkeypatch, "predict", str(archive), str(inputs),
                                             "--predictor", "text_classifier", "--silent"),
        "allennlp evaluate": lambda: allennlp(monkeypatch, "evaluate", str(archive), str(SENTIMENT)),
        "load_archive": lambda: load_archive(str(archive)),
    }  # fmt: skip


def spacy_pipeline(model: Path, target: Path) -> Path:
    """A saved spaCy pipeline whose `elmo_c` component holds the (crafted) model directory
    `model`, as a sender would ship it."""
    import spacy

    from allennlp_elmo_c.integrations.spacy_pipe import MODEL_SUBDIRECTORY

    if not target.exists():
        nlp = spacy.blank("en")
        nlp.add_pipe("elmo_c", config={"model": "unused"})
        nlp.to_disk(target, exclude=["elmo_c"])
        shutil.copytree(model, target / "elmo_c" / MODEL_SUBDIRECTORY)
    return target
