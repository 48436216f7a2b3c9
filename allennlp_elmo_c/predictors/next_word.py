import logging
from pathlib import Path
from typing import List, Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import JsonDict
from allennlp.data import Batch, DatasetReader, Instance
from allennlp.models import Model
from allennlp.nn.util import move_to_device
from allennlp.predictors.predictor import Predictor

from allennlp_elmo_c.models.elmo_c import read_words

logger = logging.getLogger(__name__)


@Predictor.register("elmo_c_next_word")
class NextWordPredictor(Predictor):
    """
    For every word of `{"sentence": "..."}`, the `top_k` candidate words closest (cosine) to
    the forward LM's prediction of the next word and the backward LM's of the previous one:
    `tokens`, `next_words` and `previous_words` (per token, `{"word", "cosine"}` best first).
    The candidates: `candidates_file` (one per line), else the `elmo_c` model's
    `nearest_neighbour_words`, else the `max_candidates` most frequent fastText words.
    """

    def __init__(
        self,
        model: Model,
        dataset_reader: DatasetReader,
        top_k: int = 5,
        candidates_file: Optional[str] = None,
        max_candidates: int = 100_000,
    ) -> None:
        super().__init__(model, dataset_reader)
        if not getattr(model, "predicts_vectors", False):
            raise ConfigurationError(
                f"elmo_c_next_word: the archive's model ({type(model).__name__}) does not "
                "predict word vectors (its output heads are softmax-type over a vocabulary, or "
                "it is no elmo_c model); use the archive of an ELMo-C (continuous head) biLM, "
                "and `allennlp evaluate` for a softmax model's perplexity"
            )
        if top_k < 1 or max_candidates < 1:
            raise ConfigurationError("elmo_c_next_word: top_k and max_candidates must be >= 1")
        boundary_tokens = getattr(dataset_reader, "boundary_tokens", [])
        if len(boundary_tokens) != 2:
            raise ConfigurationError(
                "elmo_c_next_word: expected a reader that adds one start and one end token "
                f"(lm_corpus), found boundary tokens {boundary_tokens}"
            )
        self._top_k = top_k
        self._words = self._candidate_words(candidates_file, max_candidates)
        device = next(model.parameters()).device
        self._vectors = model.target_vectors(self._words, device)  # type: ignore[operator]
        logger.info("elmo_c_next_word: %d candidate words", len(self._words))

    def _candidate_words(self, candidates_file: Optional[str], max_candidates: int) -> List[str]:
        if candidates_file is not None:
            if not Path(candidates_file).is_file():
                raise ConfigurationError(
                    f"elmo_c_next_word: candidates_file {candidates_file} does not exist"
                )
            words = read_words(candidates_file)
            if not words:
                raise ConfigurationError(f"elmo_c_next_word: {candidates_file} has no words")
            return words
        words = self._model.candidate_words or self._model.target_vocabulary  # type: ignore
        if not words:
            raise ConfigurationError(
                "elmo_c_next_word: the archive has no candidate words and its target embedder "
                "no vocabulary; pass candidates_file in --predictor-args"
            )
        return list(words[:max_candidates])

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        if "sentence" not in json_dict:
            raise ConfigurationError(
                f'elmo_c_next_word: expected {{"sentence": "..."}}, got keys {sorted(json_dict)}'
            )
        sentence = json_dict["sentence"]
        if not isinstance(sentence, str):
            raise ConfigurationError(
                f'elmo_c_next_word: "sentence" must be a string, got {type(sentence).__name__}'
            )
        return self._dataset_reader.text_to_instance(sentence)  # type: ignore

    def predict_instance(self, instance: Instance) -> JsonDict:
        return self.predict_batch_instance([instance])[0]

    def predict_batch_instance(self, instances: List[Instance]) -> List[JsonDict]:
        for instance in instances:
            self._dataset_reader.apply_token_indexers(instance)
        batch = Batch(instances)
        batch.index_instances(self._model.vocab)
        with torch.no_grad():
            tensors = move_to_device(batch.as_tensor_dict(), self._vectors.device)
            output = self._model(**tensors)
        return [
            self._neighbours(instance, output["forward_predictions"][i],
                             output["backward_predictions"][i])
            for i, instance in enumerate(instances)
        ]  # fmt: skip

    def _neighbours(
        self, instance: Instance, forward: torch.Tensor, backward: torch.Tensor
    ) -> JsonDict:
        # Tokens are <S> w_1 .. w_n </S>: the forward prediction at t is for token t + 1, the
        # backward one at t for token t.
        tokens = [token.text for token in instance["tokens"].tokens][1:-1]  # type: ignore
        count = len(tokens)
        return {
            "tokens": tokens,
            "next_words": self._top(forward[1 : count + 1]),
            "previous_words": self._top(backward[:count]),
        }

    def _top(self, predictions: torch.Tensor) -> List[List[JsonDict]]:
        if len(predictions) == 0:
            return []
        predictions = predictions.float()
        cosines = torch.nn.functional.normalize(predictions, dim=-1) @ self._vectors.t()
        scores, indices = cosines.topk(min(self._top_k, len(self._words)), dim=-1)
        return [
            [{"word": self._words[i], "cosine": s} for i, s in zip(row, row_scores)]
            for row, row_scores in zip(indices.tolist(), scores.tolist())
        ]
