"""
`run.py`'s section 4, `data_pipeline`: reading, `fasttext_subwords` indexing, batching and the
fastText lookup, tokens/s, as a share of an ELMo-C training step.
"""

import math
import tempfile
import time
from pathlib import Path
from typing import Optional

import torch

from experiments.speed.run_models import (
    FASTTEXT_FIXTURE,
    PROJECT,
    TEXT_FIXTURE,
    TIMESTEPS,
    Profile,
    adam,
    elmo_c_batch,
    elmo_c_model,
    model_step,
    sample_words,
)
from experiments.common.timing import synchronize, time_in_turn

from allennlp.data import Vocabulary

from allennlp_elmo_c.modules.token_embedders.fasttext import FastTextEmbedder

def data_pipeline(profile: Profile, device, training: Optional[dict], meter, log) -> dict:
    """Reading + indexing + batching + fastText lookup of the fixture corpus, with the fixture
    fastText model, against an ELMo-C demo training step's speed."""
    from allennlp.data import Batch

    from allennlp_elmo_c.data.dataset_readers.lm_corpus import LmCorpusReader
    from allennlp_elmo_c.data.token_indexers.fasttext_subwords import FastTextSubwordsIndexer

    text = TEXT_FIXTURE.read_text()
    repeats = max(1, math.ceil(profile.pipeline_tokens / len(text.split())))
    embedder = FastTextEmbedder(str(FASTTEXT_FIXTURE)).to(device)
    vocab = Vocabulary()
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "corpus.txt"
        corpus.write_text(text * repeats)
        timings = {}
        indexer = FastTextSubwordsIndexer(str(FASTTEXT_FIXTURE))
        reader = LmCorpusReader(token_indexers={"tokens": indexer}, max_sequence_length=TIMESTEPS)
        start = time.perf_counter()
        instances = list(reader.read(str(corpus)))
        timings["read"] = time.perf_counter() - start
        tokens = sum(len(instance["tokens"].tokens) - 1 for instance in instances)
        start = time.perf_counter()
        for instance in instances:
            reader.apply_token_indexers(instance)
            instance.index_fields(vocab)
        batch_size = 64
        batches = [Batch(instances[i : i + batch_size]).as_tensor_dict()
                   for i in range(0, len(instances), batch_size)]  # fmt: skip
        timings["index_and_batch"] = time.perf_counter() - start
        start = time.perf_counter()
        with torch.no_grad():
            for tensors in batches:
                fields = {k: v.to(device) for k, v in tensors["tokens"]["tokens"].items()}
                embedder(**fields)
        synchronize(device)
        timings["fasttext_lookup"] = time.perf_counter() - start
    total = sum(timings.values())
    result = {"tokens": tokens, "fasttext_model": str(FASTTEXT_FIXTURE.relative_to(PROJECT)),
              "fasttext_dim": embedder.get_output_dim(),
              "seconds": timings, "tokens_per_s": {k: tokens / v for k, v in timings.items()},
              "pipeline_tokens_per_s": tokens / total}  # fmt: skip
    if training is None:
        log("data_pipeline: timing an ELMo-C demo training step to compare with")
        size, batch_size, steps, warmup = profile.end_to_end[0]
        generator = torch.Generator().manual_seed(0)
        words = sample_words(batch_size, TIMESTEPS, generator)
        model = elmo_c_model(size, profile.fasttext_rows).to(device)
        step = model_step(model, adam(model),
                          elmo_c_batch(words, profile.fasttext_rows, device, generator))
        seconds, _ = time_in_turn({"step": step}, steps, warmup, device)
        training = {"size": size, "tokens_per_s": batch_size * TIMESTEPS / seconds["step"]}
    per_token = 1 / result["pipeline_tokens_per_s"]
    training_per_token = 1 / training["tokens_per_s"]
    result["training_step"] = {"size": training["size"], "tokens_per_s": training["tokens_per_s"]}
    result["share_of_step"] = per_token / (per_token + training_per_token)
    return result
