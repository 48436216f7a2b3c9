"""Linear probes of a biLM's frozen features: every token's features (each layer, their average,
the biLM's fastText input) and a standardized multinomial logistic regression fitted on them."""

import time
import warnings
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy
import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.modules.elmo_c import embed_sentences
from allennlp_elmo_c.modules.token_embedders.string_embedder import StringEmbedder

Tagged = List[Tuple[List[str], List[str]]]

FASTTEXT = "fastText (the biLM's input)"
AVERAGE = "average of all layers"


def read_tagged(path: Path, limit: Optional[int] = None) -> Tagged:
    """`(words, tags)` per non-empty line of `word###tag` tokens (the first `limit` lines)."""
    sentences: Tagged = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if limit is not None and len(sentences) >= limit:
                break
            tokens = line.split()
            if not tokens:
                continue
            pairs = [token.rsplit("###", 1) for token in tokens]
            bad = [token for token, pair in zip(tokens, pairs) if len(pair) != 2 or not pair[0]]
            if bad:
                raise ConfigurationError(f"{path}:{number}: not word###tag: {bad[0]!r}")
            sentences.append(([w for w, _ in pairs], [t for _, t in pairs]))
    if not sentences:
        raise ConfigurationError(f"{path}: no tagged sentences")
    return sentences


def token_features(
    representations, sentences: List[List[str]], batch_size: int
) -> Dict[str, numpy.ndarray]:
    """Representation name -> `(num_tokens, dim)` over all tokens of `sentences` in order."""
    order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))  # as elmo-c-embed
    per_sentence: List[Optional[numpy.ndarray]] = [None] * len(sentences)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        batch = [sentences[i] for i in chunk]
        vectors = embed_sentences(batch, representations, torch.device("cpu"))
        for index, layers in zip(chunk, vectors):  # (num_layers, num_tokens, dim)
            per_sentence[index] = layers
    layers = numpy.concatenate(per_sentence, axis=1)  # type: ignore[arg-type]
    features: Dict[str, numpy.ndarray] = {}
    embedder = representations.bilm.token_embedder
    if not representations.bilm.is_subword and isinstance(embedder, StringEmbedder):
        vocabulary = sorted({word for sentence in sentences for word in sentence})
        with torch.no_grad():
            table = embedder.embed_strings(vocabulary).float().cpu().numpy()
        row = {word: i for i, word in enumerate(vocabulary)}
        features[FASTTEXT] = table[[row[word] for sentence in sentences for word in sentence]]
    for k, layer in enumerate(layers):
        features[layer_name(k)] = layer
    features[AVERAGE] = layers.mean(axis=0)
    return features


def layer_name(k: int, half: Optional[str] = None) -> str:
    name = f"layer {k}" + (" (input projection, no context)" if k == 0 else "")
    return name if half is None else f"layer {k} {half} half"


def probe(
    train_x: numpy.ndarray,
    train_y: Sequence[str],
    dev_x: numpy.ndarray,
    dev_y: Sequence[str],
    c: float,
    max_iter: int,
    seed: int,
    keep_predictions: bool = False,
) -> Dict[str, object]:
    """The dev accuracy and fitting facts (and dev predictions, `keep_predictions`) of a
    standardized multinomial logistic regression; scikit-learn is imported here."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(train_x)
    model = LogisticRegression(C=c, max_iter=max_iter, random_state=seed)
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(scaler.transform(train_x), train_y)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    predictions = model.predict(scaler.transform(dev_x))
    result = {
        "accuracy": float(numpy.mean(predictions == numpy.asarray(dev_y))),
        "dim": int(train_x.shape[1]),
        "iterations": int(numpy.max(model.n_iter_)),
        "converged": converged,
        "fit_seconds": round(time.perf_counter() - started, 2),
    }
    if keep_predictions:
        result["predictions"] = predictions.tolist()
    return result


def named_paths(values: Sequence[str], option: str) -> Dict[str, str]:
    """`{name: path}` from `NAME=PATH` values of `option`, each name once."""
    result = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise ConfigurationError(f"{option} takes NAME=PATH, not {value!r}")
        if name in result:
            raise ConfigurationError(f"{option}: {name!r} given twice")
        result[name] = path
    return result
