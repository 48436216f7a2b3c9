import hashlib
import logging
from pathlib import Path
from typing import List, Optional

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary

from allennlp.modules.token_embedders.token_embedder import TokenEmbedder

from allennlp_elmo_c.archive import PretrainedBiLM
from allennlp_elmo_c.common.config_defaults import ELMO_C_DIM
from allennlp_elmo_c.fasttext.fasttext_source import archive_being_loaded
from allennlp_elmo_c.modules.elmo_c import ElmoC
from allennlp_elmo_c.modules.elmo_c_representations import ElmoCRepresentations

logger = logging.getLogger(__name__)


@TokenEmbedder.register("elmo_c_token_embedder")
class ElmoCTokenEmbedder(TokenEmbedder):
    """
    A drop-in replacement for `elmo_token_embedder` that uses a trained `elmo_c` archive (ELMo-C
    or any baseline trained with the `elmo_c` model): the output is a learned `ScalarMix` of the
    biLM's layers (1024-d for the paper's size, so the `input_size` numbers of existing ELMo task
    configs stay valid), with dropout. Index the words, under the same key, with the indexer the
    biLM read in pretraining: `fasttext_subwords` (pointing at the biLM's fastText `.bin`) for
    fastText input, `elmo_characters` for a char-CNN input, `bpe_first_subword` (with the
    archive as its `vocabulary`) for ELMo-Sub, whose words are represented by their first
    subword. The mix's parameters are AllenNLP `ScalarMix` parameters (under this embedder:
    `_scalar_mixes.0.scalar_parameters.*`, `_scalar_mixes.0.gamma`), so the usual
    `scalar_parameters` regularizer regexes match; the biLM's parameter names match none of the
    `torch.nn.LSTM` initializer regexes of task configs (`.*weight_ih.*` etc.), so those never
    re-initialise it.

    Registered as a `TokenEmbedder` with name "elmo_c_token_embedder".

    # Parameters

    archive_file : `str`
        The ELMo-C biLM: its model directory (`package`) or `model.tar.gz`.
    do_layer_norm : `bool`, optional (default = `False`)
    dropout : `float`, optional (default = `0.5`)
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the biLM.
    projection_dim : `int`, optional
        Project the mix down to this size.
    scalar_mix_parameters : `List[float]`, optional
        Fixed, untrained pre-softmax layer weights.
    keep_sentence_boundaries : `bool`, optional (default = `False`)
        Keep the `<S>` / `</S>` positions in the output (then it has 2 more timesteps than the
        input and the text field's mask no longer matches it; for custom models only).
    fasttext_path : `str`, optional
        The biLM's fastText `.bin` at another path than recorded in the archive.
    num_output_representations : `int`, optional (default = `1`)
        Several independent mixes for models that use ELMo in several places: the output is
        their concatenation, `num_output_representations x 1024`, mix k in slice k (split it in
        the model). `ElmoCRepresentations` returns them as a list instead.
    tokenizer_path : `str`, optional
        For an ELMo-Sub archive: its BPE tokenizer JSON at another path than recorded.
    expected_output_dim : `int`, optional
        The size the config assumes for the biLM's representations (2 x its projection size,
        before `projection_dim` and `num_output_representations`); an archive of another size is
        a `ConfigurationError` naming both sizes at construction, instead of a shape error at the
        first batch. The downstream configs set it, and size their layers, from the environment
        variable `ELMO_C_DIM` (default 1024, the paper's size).
    bundle_fasttext : `bool`, optional (default = `True`)
        Read when the task run ends, not by the embedder: the `elmo_c_run` callback links the
        biLM's fastText `.bin` into `fasttext/<fingerprint>.bin`, which the config's
        `include_in_archive` puts in `model.tar.gz`, so that the task archive works alone. Set it
        false to keep a large `.bin` (7.2 GB for `cc.en.300.bin`) out of every task archive;
        the `.bin` is then looked for as `allennlp_elmo_c.fasttext.fasttext_source` says.
    vocab : `Vocabulary`, optional
        The task model's vocabulary (AllenNLP passes it). The biLM's config and vocabulary
        (`PretrainedBiLM.record`, no weights) are kept in it, in a namespace of their own, and so
        in the task's archive; its weights are in the task model's state dict. A task archive
        therefore loads (predict, evaluate) after the biLM archive was moved or deleted: the biLM
        is then built from that record and the state dict fills in its weights (running it
        before they are loaded is an error). Only the fastText `.bin` is still needed.
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
        # `ElmoC` turns the mixing options into the representations (one place for both); its
        # `representations` are kept, not the wrapper, so state-dict keys stay `_elmo_c.*`.
        self._elmo_c = ElmoC(
            None,
            num_output_representations,
            requires_grad=requires_grad,
            do_layer_norm=do_layer_norm,
            dropout=dropout,
            keep_sentence_boundaries=keep_sentence_boundaries,
            scalar_mix_parameters=scalar_mix_parameters,
            module=bilm,
        ).representations
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
        """The biLM from its archive (its record then kept in `vocab`), or from the record a
        trained task model's vocabulary holds: when the archive is gone, and always while a
        task archive is loaded (`loading_archive`: the biLM is the one the task archive keeps,
        never a file at the path its config records)."""
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
        """The error for inputs that are not the outputs of the biLM's indexer."""
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
    def representations(self) -> ElmoCRepresentations:
        """The mixes of the biLM's layers this embedder returns (their `word_indexer()` and
        `vocab` index words for it)."""
        return self._elmo_c

    def forward(self, *tensors: torch.Tensor, **inputs: torch.Tensor) -> torch.Tensor:
        """
        # Parameters

        *tensors, **inputs : `torch.Tensor`
            The output of the biLM's own word indexer, `(batch_size, timesteps, ...)` (see the
            class docstring), by keyword; AllenNLP passes the output of an indexer that has only
            one (`elmo_characters`, `single_id`) positionally.

        # Returns

        `(batch_size, timesteps, output_dim)`.
        """
        if tensors:
            if len(tensors) != 1 or inputs or len(self._input_names) != 1:
                raise self._wrong_indexer(f"{len(tensors)} positional and {sorted(inputs)}")
            inputs = {self._input_names[0]: tensors[0]}
        # Every batch (a few set operations): the wrong indexer fails here, not deep in torch.
        missing = set(self._input_names) - set(inputs) - {"fasttext_fingerprint"}
        if missing or set(inputs) - set(self._input_names):
            raise self._wrong_indexer(str(sorted(inputs)))
        # (A biLM built from the task model's record without weights is an error there.)
        mixes = self._elmo_c(**inputs)["elmo_representations"]
        output = mixes[0] if len(mixes) == 1 else torch.cat(mixes, dim=-1)
        if self._projection is not None:
            output = self._projection(output)
        return output


def record_namespace(archive_file: str) -> str:
    """The vocabulary namespace in which a task model keeps the record of the biLM archive
    `archive_file` (one per archive path, so several ELMo-C embedders can coexist)."""
    return "elmo_c_bilm_" + hashlib.blake2b(archive_file.encode("utf-8"), digest_size=6).hexdigest()
