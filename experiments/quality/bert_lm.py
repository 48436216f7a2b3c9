"""
A small BERT pretrained from scratch for `flair_comparison.py`, as a user without pretrained
weights would make one: a WordPiece vocabulary trained with `tokenizers` on the corpus
(`bert_tokenizer_step`), transformers' `BertForMaskedLM` from a `BertConfig` of one of
`systems.BERT_SHAPES`, masked-LM with the usual 15% / 80-10-10 masking
(`DataCollatorForLanguageModeling`) on blocks of the concatenated corpus (`run_mlm`'s grouped
texts), AdamW with a linear warm-up and then a flat learning rate, to budgets of CPU time
(`train_bert`). Each budget's snapshot is a local Hugging Face model directory (the model and its
tokenizer) for Flair's `TransformerWordEmbeddings`; a checkpoint of the whole training state,
written at each snapshot and every few CPU-minutes, lets an interrupted or a longer run go on.
"""

import json
import os
import time
from pathlib import Path
from typing import Dict, List

import numpy

from allennlp_elmo_c.common.atomic import atomic_open
from experiments.quality.systems import BERT_SHAPES

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CHECKPOINT = "checkpoint.pt"


def offline() -> None:
    """Nothing from the Hugging Face hub: every model and tokenizer comes from local files."""
    os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import huggingface_hub.constants
    import transformers.utils.hub

    huggingface_hub.constants.HF_HUB_OFFLINE = True
    transformers.utils.hub._is_offline_mode = True


def encode_lines(tokenizer, path: str, chunk: int = 10_000) -> numpy.ndarray:
    """The WordPiece ids of every line of `path`, concatenated (no special tokens)."""
    parts = []
    with open(path, encoding="utf-8") as lines:
        batch = []
        for line in lines:
            batch.append(line.rstrip("\n"))
            if len(batch) == chunk:
                parts += [e.ids for e in tokenizer.encode_batch(batch, add_special_tokens=False)]
                batch = []
        parts += [e.ids for e in tokenizer.encode_batch(batch, add_special_tokens=False)]
    return numpy.fromiter((i for ids in parts for i in ids), dtype=numpy.int32)


def bert_tokenizer_step(out: Path, corpus: dict, vocabulary_size: int) -> dict:
    """
    A cased WordPiece vocabulary of `vocabulary_size` trained with `tokenizers` on the corpus's
    training text, saved as a `BertTokenizerFast` under OUT/bert_tokenizer, and the training text
    in its ids (`ids.npy`): the corpus's tokens, WordPiece tokens and tokens per word.
    """
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    directory = out / "bert_tokenizer"
    directory.mkdir(parents=True, exist_ok=True)
    trainer = BertWordPieceTokenizer(lowercase=False, strip_accents=False)
    trainer.train([corpus["train"]], vocab_size=vocabulary_size, min_frequency=2,
                  special_tokens=SPECIAL_TOKENS, show_progress=False)  # fmt: skip
    trainer.save_model(str(directory))
    tokenizer = BertTokenizerFast(str(directory / "vocab.txt"), do_lower_case=False,
                                  strip_accents=False)  # fmt: skip
    tokenizer.save_pretrained(str(directory))
    ids = encode_lines(tokenizer.backend_tokenizer, corpus["train"])
    numpy.save(directory / "ids.npy", ids)
    words = sum(len(line.split()) for line in open(corpus["train"], encoding="utf-8"))
    return {
        "dir": str(directory.resolve()), "ids": str((directory / "ids.npy").resolve()),
        "vocabulary_size": len(tokenizer), "tokens": int(len(ids)), "words": words,
        "tokens_per_word": len(ids) / max(words, 1),
    }  # fmt: skip


def bert_model(shape: str, tokenizer, settings: dict):
    from transformers import BertConfig, BertForMaskedLM

    layers, hidden, heads = BERT_SHAPES[shape]
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=4 * hidden,
                        max_position_embeddings=max(512, settings["block_size"]),
                        pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    return BertForMaskedLM(config)


class Blocks:
    """The corpus's ids in blocks of `block_size` - 2 tokens, each read as [CLS] block [SEP], in
    batches of `batch_size` blocks, the blocks in a new order each epoch (from the seed): batch
    `step` of the run is the same whether the run was interrupted or not."""

    def __init__(self, ids: numpy.ndarray, tokenizer, settings: dict, seed: int) -> None:
        self.width = settings["block_size"] - 2
        self.batch_size = settings["batch_size"]
        self.blocks = ids[: len(ids) // self.width * self.width].reshape(-1, self.width)
        if len(self.blocks) < self.batch_size:
            raise ValueError(f"the corpus holds {len(self.blocks)} blocks, fewer than a batch")
        self.per_epoch = len(self.blocks) // self.batch_size
        self.seed = seed
        self.ends = (tokenizer.cls_token_id, tokenizer.sep_token_id)

    def batch(self, step: int) -> List[List[int]]:
        epoch, number = divmod(step, self.per_epoch)
        order = numpy.random.default_rng([self.seed, epoch]).permutation(len(self.blocks))
        chosen = order[number * self.batch_size : (number + 1) * self.batch_size]
        return [[self.ends[0], *self.blocks[i].tolist(), self.ends[1]] for i in chosen]


def budget_name(minutes: float) -> str:
    return f"budget-{minutes:g}min"


def save_checkpoint(run: Path, model, optimizer, state: dict) -> None:
    import torch

    temporary = run / f"{CHECKPOINT}.partial"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "rng": torch.get_rng_state(), **state}, temporary)  # fmt: skip
    os.replace(temporary, run / CHECKPOINT)


def load_checkpoint(run: Path, model, optimizer, state: dict) -> dict:
    """`state` as the run's checkpoint left it (the model, the optimizer and torch's generator
    restored), or as it is when there is none."""
    import torch

    if not (run / CHECKPOINT).is_file():
        return state
    saved = torch.load(run / CHECKPOINT, weights_only=True)
    model.load_state_dict(saved.pop("model"))
    optimizer.load_state_dict(saved.pop("optimizer"))
    torch.set_rng_state(saved.pop("rng"))
    return saved


def write_snapshot(run: Path, minutes: float, model, tokenizer, state: dict, per_word: float):
    """The model at a budget as a Hugging Face model directory, and its record beside it."""
    directory = run / budget_name(minutes)
    model.save_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    losses = state["losses"][-100:]
    record = {
        "model": str(directory.resolve()), "cpu_seconds": state["seconds"],
        "steps": state["step"], "tokens": state["tokens"],
        "words": state["tokens"] / per_word,
        "tokens_per_second": state["tokens"] / max(state["seconds"], 1e-9),
        "training_loss": sum(losses) / max(len(losses), 1),
    }  # fmt: skip
    with atomic_open(run / f"{budget_name(minutes)}.json") as stream:
        stream.write(json.dumps(record, indent=1))


def saved_records(run: Path, minutes: List[float]) -> Dict[str, dict]:
    found = {f"{m:g}": run / f"{budget_name(m)}.json" for m in sorted(minutes)}
    return {key: json.loads(path.read_text()) for key, path in found.items() if path.is_file()}


def train_bert(tokenizer_step: dict, run: Path, shape: str, seed: int, minutes: List[float],
               settings: dict) -> Dict[str, dict]:  # fmt: skip
    """
    A BERT of `shape` (`systems.BERT_SHAPES`) pretrained with masked LM on the ids of
    `bert_tokenizer_step` until each of `minutes` of CPU time (`time.process_time` of the training
    steps: reading the batch, masking, forward, backward, update), one snapshot at each; an earlier
    run in `run` goes on from its checkpoint. `settings`: `block_size`, `batch_size`,
    `learning_rate`, `warmup_steps`, `checkpoint_minutes`. Returns {minutes: the snapshot's
    record: its model directory, CPU seconds, steps, WordPiece tokens read and their words, the
    mean training loss of its last 100 steps}.
    """
    import torch
    from transformers import BertTokenizerFast, DataCollatorForLanguageModeling

    torch.manual_seed(seed)
    tokenizer = BertTokenizerFast.from_pretrained(tokenizer_step["dir"])
    model = bert_model(shape, tokenizer, settings)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings["learning_rate"],
                                  betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)  # fmt: skip
    run.mkdir(parents=True, exist_ok=True)
    start = {"step": 0, "seconds": 0.0, "tokens": 0, "losses": [], "checkpoint_seconds": 0.0}
    state = load_checkpoint(run, model, optimizer, start)
    blocks = Blocks(numpy.load(tokenizer_step["ids"]), tokenizer, settings, seed)
    masking = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    pending = [m for m in sorted(minutes) if not (run / f"{budget_name(m)}.json").is_file()]
    if pending and state["seconds"] >= 60 * pending[0]:
        raise RuntimeError(f"{run} trained past {pending[0]:g} CPU-minutes, with no snapshot there")
    model.train()
    while pending:
        began = time.process_time()
        training_step(model, optimizer, masking, blocks, state, settings)
        state["seconds"] += time.process_time() - began
        if state["seconds"] >= 60 * pending[0]:
            while pending and state["seconds"] >= 60 * pending[0]:
                per_word = tokenizer_step["tokens_per_word"]
                write_snapshot(run, pending.pop(0), model, tokenizer, state, per_word)
            state["checkpoint_seconds"] = state["seconds"]
            save_checkpoint(run, model, optimizer, state)
        elif state["seconds"] - state["checkpoint_seconds"] >= 60 * settings["checkpoint_minutes"]:
            state["checkpoint_seconds"] = state["seconds"]
            save_checkpoint(run, model, optimizer, state)
    return saved_records(run, minutes)


def training_step(model, optimizer, masking, blocks: Blocks, state: dict, settings: dict) -> None:
    """One update on batch `state["step"]`, the learning rate warmed up linearly over the first
    `warmup_steps` updates; `state` counts it."""
    import torch

    batch = masking([{"input_ids": ids} for ids in blocks.batch(state["step"])])
    scale = min(1.0, (state["step"] + 1) / max(1, settings["warmup_steps"]))
    for group in optimizer.param_groups:
        group["lr"] = settings["learning_rate"] * scale
    loss = model(input_ids=batch["input_ids"], labels=batch["labels"]).loss
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    state["step"] += 1
    state["tokens"] += blocks.batch_size * blocks.width
    state["losses"] = state["losses"][-99:] + [loss.item()]
