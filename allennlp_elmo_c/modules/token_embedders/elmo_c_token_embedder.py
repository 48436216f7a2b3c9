import hashlib
import logging
from pathlib import Path
from typing import List, Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary

from allennlp.modules.token_embedders.token_embedder import TokenEmbedder

from allennlp_elmo_c.common.config_defaults import ELMO_C_DIM
from allennlp_elmo_c.fasttext.fasttext_source import archive_being_loaded
from allennlp_elmo_c.modules.elmo_c import ElmoC, PretrainedBiLM

logger = logging.getLogger(__name__)


@TokenEmbedder.register("elmo_c_token_embedder")
class ElmoCTokenEmbedder(TokenEmbedder):
    """
    `elmo_token_embedder` for the trained `elmo_c` biLM of `archive_file` (model directory or
    `model.tar.gz`): `num_output_representations` learned `ScalarMix`es of its layers (named as
    `Elmo`'s, so `scalar_parameters` regularizers match), concatenated, with dropout, projected
    to `projection_dim` if given; the other mixing parameters as `elmo_token_embedder`'s.
    `fasttext_path`, `tokenizer_path`: as for `PretrainedBiLM.from_archive`.
    `expected_output_dim`: the biLM size the config assumes (`ELMO_C_DIM`), another refused.
    `bundle_fasttext`: whether the `elmo_c_run` callback links the biLM's `.bin` into
    `fasttext/` at the run's end, for `include_in_archive` to put in `model.tar.gz`.

    Index the words under the same key with the biLM's own indexer (`fasttext_subwords` with
    `archive_file`, `elmo_characters`, `bpe_first_subword`). The biLM's record is kept in the
    task model's vocabulary and its weights in its state dict, so a task archive loads without
    the biLM's.
    """

    def __init__(
        self,
        archive_file: str,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        requires_grad: bool = False,
        projection_dim: Optional[int] = None,
        scalar_mix_parameters: Optional[List[float]] = None,
        keep_sentence_boundaries: bool = False,
        fasttext_path: Optional[str] = None,
        num_output_representations: int = 1,
        tokenizer_path: Optional[str] = None,
        expected_output_dim: Optional[int] = None,
        bundle_fasttext: bool = True,
        vocab: Optional[Vocabulary] = None,
    ) -> None:
        super().__init__()
        if num_output_representations < 1:
            raise ConfigurationError(
                "elmo_c_token_embedder: num_output_representations must be >= 1"
            )
        bilm = self._read_bilm(archive_file, fasttext_path, tokenizer_path, vocab)
        self._elmo_c = ElmoC(
            None,
            num_output_representations,
            requires_grad=requires_grad,
            do_layer_norm=do_layer_norm,
            dropout=dropout,
            keep_sentence_boundaries=keep_sentence_boundaries,
            scalar_mix_parameters=scalar_mix_parameters,
            module=bilm,
        )
        bilm_dim = self._elmo_c.get_output_dim()
        if expected_output_dim is not None and expected_output_dim != bilm_dim:
            raise ConfigurationError(
                f"elmo_c_token_embedder: the biLM in {archive_file} outputs {bilm_dim}-d "
                f"representations, but the config expects {expected_output_dim}-d "
                f"(expected_output_dim). Set the environment variable {ELMO_C_DIM}={bilm_dim} "
                f"(the downstream configs size their layers and expected_output_dim from it), "
                f"or set expected_output_dim to {bilm_dim} and resize the layers that read this "
                "embedder."
            )
        self._input_names = list(self._elmo_c.word_indexer().get_empty_token_list())
        self._archive_file = archive_file
        self._projection = None
        self.output_dim = bilm_dim * num_output_representations
        if projection_dim:
            self._projection = torch.nn.Linear(self.output_dim, projection_dim)
            self.output_dim = projection_dim

    def _read_bilm(
        self,
        archive_file: str,
        fasttext_path: Optional[str],
        tokenizer_path: Optional[str],
        vocab: Optional[Vocabulary],
    ) -> PretrainedBiLM:
        """The biLM from its archive (its record then kept in `vocab`), or from the record in
        `vocab` when the archive is gone or a task archive is being loaded."""
        namespace = record_namespace(archive_file)
        records = []
        if vocab is not None and namespace in vocab.get_namespaces():
            tokens = vocab.get_token_to_index_vocabulary(namespace)
            records = [token for token in tokens if token.startswith("{")]
        loading = vocab is not None and archive_being_loaded() is not None
        if loading and not records:
            raise ConfigurationError(
                f"elmo_c_token_embedder: the task archive being loaded keeps no record of its "
                f"biLM {archive_file}; a task archive's biLM is built from the record it keeps, "
                "never read from the path its config names: train the task model again"
            )
        if not loading and (Path(archive_file).exists() or vocab is None):
            bilm = PretrainedBiLM.from_archive(
                archive_file, fasttext_path=fasttext_path, tokenizer_path=tokenizer_path
            )
            if vocab is not None and bilm.config is not None:
                vocab.add_token_to_namespace(bilm.record(), namespace)
            return bilm
        if not records:
            raise ConfigurationError(f"ELMo-C archive {archive_file} does not exist")
        logger.info("%s: building its biLM from the task model's record", archive_file)
        # Without weights (on the meta device): the task model's state dict brings them.
        return PretrainedBiLM.from_record(
            records[-1], archive_file, fasttext_path=fasttext_path, tokenizer_path=tokenizer_path
        )

    def _wrong_indexer(self, got: str) -> ConfigurationError:
        if self._elmo_c.bilm.fasttext_path is not None:
            indexer = (
                f"{{type: 'fasttext_subwords', archive_file: '{self._archive_file}'}} (or "
                "model_path: the biLM's fastText .bin)"
            )
        else:
            indexer = f"the biLM's own indexer ({type(self._elmo_c.word_indexer()).__name__})"
        return ConfigurationError(
            f"elmo_c_token_embedder ({self._archive_file}) expects the outputs "
            f"{self._input_names} of its biLM's indexer, got {got}: index the words under this "
            f"embedder's key with {indexer}."
        )

    def get_output_dim(self) -> int:
        return self.output_dim

    @property
    def representations(self) -> ElmoC:
        return self._elmo_c

    def forward(self, *tensors: torch.Tensor, **inputs: torch.Tensor) -> torch.Tensor:
        """The biLM's word indexer's outputs by keyword (one may be positional) to `(batch,
        timesteps, output_dim)`."""
        if tensors:
            if len(tensors) != 1 or inputs or len(self._input_names) != 1:
                raise self._wrong_indexer(f"{len(tensors)} positional and {sorted(inputs)}")
            inputs = {self._input_names[0]: tensors[0]}
        # The wrong indexer fails here, not deep in torch.
        missing = set(self._input_names) - set(inputs) - {"fasttext_fingerprint"}
        if missing or set(inputs) - set(self._input_names):
            raise self._wrong_indexer(str(sorted(inputs)))
        mixes = self._elmo_c(**inputs)["elmo_representations"]
        output = mixes[0] if len(mixes) == 1 else torch.cat(mixes, dim=-1)
        if self._projection is not None:
            output = self._projection(output)
        return output


def record_namespace(archive_file: str) -> str:
    """The vocabulary namespace of the record of the biLM `archive_file` (one per path)."""
    return "elmo_c_bilm_" + hashlib.blake2b(archive_file.encode("utf-8"), digest_size=6).hexdigest()
