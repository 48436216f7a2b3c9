"""
What a model directory and each front door cost, against the bare module.

    python -m experiments.speed.front_doors --model runs/per_minute/runs/pretrain-elmo_c_cosine \
        --text data/news/dev.txt --report experiments/speed/RESULTS.md

1. `package`: the time to write the model directory of `--model` (a run directory or archive)
   and the directory's size (the fastText `.bin` counted whole, hard-linked or not).
2. Embedding throughput (tokens/s, CPU, `--threads` threads) of the same `--sentences`
   sentences of `--text` (whitespace-tokenized), in batches of `--batch-size`, from words to
   float vectors, through:
   - `module`: the bare module, `ElmoC` (all layers, no mix) on
     `index_sentences` ids: what every front door does at least;
   - `ElmoC`: `batch_to_ids` + `ElmoC` (one mix);
   - `ElmoCEmbedder`: `embed_batch` (NumPy arrays, every layer);
   - `token_embedder`: `elmo_c_token_embedder` on `fasttext_subwords` ids (one mix);
   - `huggingface`: `ElmoCTokenizer` + `AutoModel` (`output_hidden_states`);
   - `spacy`: the `elmo_c` component's `pipe` on spaCy `Doc`s made from the same words.
   Each is run in turn, `--repeats` times after one warm-up (medians of interleaved repeats), in
   one process; the report gives each one's cost over the module's.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import torch

from experiments.common.markers import markers, replace_section

BEGIN, END = markers("front-doors")


def read_sentences(path: Path, count: int) -> List[List[str]]:
    sentences = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            words = line.split()
            if words:
                sentences.append(words)
            if len(sentences) == count:
                break
    return sentences


def batches(items: Sequence, size: int) -> List[Sequence]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def front_doors(directory: str, sentences: List[List[str]], batch_size: int) -> Dict[str, Callable[[], None]]:
    """The callables timed: each embeds every sentence once."""
    import spacy
    from allennlp.common import Params
    from allennlp.modules.token_embedders import TokenEmbedder
    from spacy.tokens import Doc
    from transformers import AutoModel, AutoTokenizer

    from allennlp_elmo_c import ElmoC, ElmoCEmbedder, batch_to_ids
    from allennlp_elmo_c.modules.elmo_c import index_sentences

    groups = batches(sentences, batch_size)
    module = ElmoC(directory, 0, dropout=0.0).eval()
    indexer, vocab = module.word_indexer(), module.vocab
    elmo = ElmoC(directory, 1, dropout=0.0).eval()
    embedder = ElmoCEmbedder(directory)
    token_embedder = TokenEmbedder.from_params(Params(
        {"type": "elmo_c_token_embedder", "archive_file": directory, "dropout": 0.0}
    )).eval()  # fmt: skip
    hf_model = AutoModel.from_pretrained(directory)
    hf_tokenizer = AutoTokenizer.from_pretrained(directory)
    nlp = spacy.blank("en")
    component = nlp.add_pipe("elmo_c", config={"model": directory, "batch_size": batch_size, "device": "cpu"})

    def run_module() -> None:
        for group in groups:
            layers, _ = module.layers(**index_sentences(list(group), indexer, vocab))
            [layer.numpy() for layer in layers]

    def run_elmo() -> None:
        for group in groups:
            elmo(batch_to_ids(list(group), elmo))["elmo_representations"][0].numpy()

    def run_embedder() -> None:
        for group in groups:
            embedder.embed_batch(list(group))

    def run_token_embedder() -> None:
        for group in groups:
            token_embedder(**index_sentences(list(group), indexer, vocab)).numpy()

    def run_huggingface() -> None:
        for group in groups:
            inputs = hf_tokenizer(list(group), is_split_into_words=True)
            [state.numpy() for state in hf_model(**inputs, output_hidden_states=True).hidden_states]

    def run_spacy() -> None:
        docs = [Doc(nlp.vocab, words=words) for words in sentences]
        for _ in component.pipe(docs):
            pass

    def no_grad(function: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            with torch.no_grad():
                function()

        return run

    return {name: no_grad(function) for name, function in (
        ("module", run_module), ("ElmoC", run_elmo), ("ElmoCEmbedder", run_embedder),
        ("token_embedder", run_token_embedder), ("huggingface", run_huggingface), ("spacy", run_spacy),
    )}  # fmt: skip


def measure(args) -> Dict:
    from allennlp_elmo_c.commands.package import package_model

    torch.set_num_threads(args.threads)
    sentences = read_sentences(args.text, args.sentences)
    tokens = sum(map(len, sentences))
    with tempfile.TemporaryDirectory(dir=args.scratch) as scratch:
        start = time.perf_counter()
        directory = package_model(str(args.model), str(Path(scratch) / "model"))
        package_seconds = time.perf_counter() - start
        files = {p.relative_to(directory).as_posix(): p.stat().st_size for p in directory.rglob("*") if p.is_file()}
        work = front_doors(str(directory), sentences, args.batch_size)
        seconds: Dict[str, List[float]] = {name: [] for name in work}
        for repeat in range(args.repeats + 1):
            for name, run in work.items():
                start = time.perf_counter()
                run()
                if repeat:  # the first round warms up
                    seconds[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    config = json.loads((Path(directory) / "config.json").read_text()) if Path(directory).exists() else {}
    return {
        "model": str(args.model), "threads": args.threads, "batch_size": args.batch_size,
        "sentences": len(sentences), "tokens": tokens, "repeats": args.repeats,
        "package_seconds": package_seconds, "files": files, "config": bool(config),
        "seconds": seconds, "medians": medians,
    }  # fmt: skip


def render(result: Dict, command: str) -> str:
    files = result["files"]
    total = sum(files.values())
    fasttext = max(files.items(), key=lambda item: item[1])
    module = result["medians"]["module"]
    lines = [
        BEGIN,
        "## A model directory and the front doors",
        "",
        f"`{command}` (CPU, {result['threads']} thread(s), {result['sentences']} sentences, "
        f"{result['tokens']:,} tokens, batches of {result['batch_size']}, median of "
        f"{result['repeats']} interleaved repeats after a warm-up).",
        "",
        f"`package` wrote the model directory of `{result['model']}` in "
        f"{result['package_seconds']:.1f} s: {total / 2**20:.1f} MiB, of which "
        f"{fasttext[1] / 2**20:.1f} MiB is the fastText `{fasttext[0]}` (hard-linked: no new disk "
        "space on the same filesystem) and "
        f"{files.get('model.safetensors', 0) / 2**20:.1f} MiB the weights.",
        "",
        "| front door | tokens/s | cost over the module |",
        "|---|---:|---:|",
    ]
    for name, seconds in result["medians"].items():
        over = "(baseline)" if name == "module" else f"{(seconds / module - 1) * 100:+.1f}%"
        lines.append(f"| {name} | {result['tokens'] / seconds:,.0f} | {over} |")
    lines += ["", END, ""]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="a run directory or model.tar.gz")
    parser.add_argument("--text", type=Path, required=True, help="whitespace-tokenized sentences")
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--scratch", type=Path, default=None, help="where the directory is written")
    parser.add_argument("--report", type=Path, default=None, help="a markdown file to update")
    parser.add_argument("--json", type=Path, default=None, help="write the measurements here")
    args = parser.parse_args(argv)
    import allennlp_elmo_c  # noqa: F401  (registers the components and front doors)

    result = measure(args)
    command = "python -m experiments.speed.front_doors " + " ".join(argv if argv is not None else sys.argv[1:])
    text = render(result, command)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    if args.report:
        replace_section(args.report, BEGIN, END, text)
    print(text)


if __name__ == "__main__":
    main()
