from typing import Dict, List, Optional, Union

import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.archive import PretrainedBiLM
from allennlp_elmo_c.modules.elmo_c_representations import ElmoCRepresentations, index_sentences
from allennlp_elmo_c.modules.subword_representations import representations_of


class ElmoC(torch.nn.Module):
    """
    AllenNLP's `allennlp.modules.elmo.Elmo` for a trained ELMo-C biLM: the same arguments (one
    `model` path in place of the options and weight files; no `vocab_to_cache`), the same output,
    the same handling of sentence boundaries. Porting code that uses `Elmo` changes its import
    and the way ids are made, since ELMo-C's ids depend on the model's fastText vectors:

        from allennlp_elmo_c import ElmoC, batch_to_ids
        elmo = ElmoC("runs/elmo_c/model.tar.gz", num_output_representations=1, dropout=0.0)
        output = elmo(batch_to_ids([["The", "council", "met", "."]], elmo))
        vectors = output["elmo_representations"][0]  # (batch, timesteps, dim)

    It mixes the biLM's layers (the input projection of both directions, then each LSTM layer,
    forward || backward) with a `ScalarMix` per output representation (parameter names
    `scalar_parameters`, as `Elmo`'s, so task configs' regularizer regexes match), then applies
    dropout. A biLM over BPE subwords (ELMo-Sub) works the same way: its words are represented
    by their first subword.

    # Parameters

    model : `str`
        The trained biLM: its model directory (`package`) or `model.tar.gz`.
    num_output_representations : `int`
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the biLM (its fastText matrix stays frozen).
    do_layer_norm : `bool`, optional (default = `False`)
    dropout : `float`, optional (default = `0.5`)
    keep_sentence_boundaries : `bool`, optional (default = `False`)
    scalar_mix_parameters : `List[float]`, optional
        Fixed pre-softmax layer weights instead of trained ones.
    module : `PretrainedBiLM`, optional
        The biLM already read (`PretrainedBiLM.from_archive`), instead of `model`, as `Elmo`'s
        `module=` takes a ready biLM.
    """

    def __init__(
        self,
        model: Optional[str],
        num_output_representations: int,
        requires_grad: bool = False,
        do_layer_norm: bool = False,
        dropout: float = 0.5,
        keep_sentence_boundaries: bool = False,
        scalar_mix_parameters: Optional[List[float]] = None,
        module: Optional[PretrainedBiLM] = None,
    ) -> None:
        super().__init__()
        if (model is None) == (module is None):
            raise ConfigurationError("ElmoC: give the model's path or a ready module, not both")
        bilm = module if module is not None else PretrainedBiLM.from_archive(str(model))
        self._elmo_c: ElmoCRepresentations = representations_of(
            bilm,
            num_output_representations=num_output_representations,
            requires_grad=requires_grad,
            do_layer_norm=do_layer_norm,
            dropout=dropout,
            keep_sentence_boundaries=keep_sentence_boundaries,
            scalar_mix_parameters=scalar_mix_parameters,
        )

    def get_output_dim(self) -> int:
        return self._elmo_c.get_output_dim()

    @property
    def num_layers(self) -> int:
        """The layers mixed: the input projection and each LSTM layer."""
        return self._elmo_c.num_layers

    @property
    def representations(self) -> ElmoCRepresentations:
        """The module that does the work (its `layers()` gives every layer unmixed)."""
        return self._elmo_c

    def batch_to_ids(self, sentences: List[List[str]]) -> Dict[str, torch.Tensor]:
        """`batch_to_ids(sentences, self)`."""
        return batch_to_ids(sentences, self)

    def forward(
        self, inputs: Optional[Dict[str, torch.Tensor]] = None, **kwargs: torch.Tensor
    ) -> Dict[str, Union[torch.Tensor, List[torch.Tensor]]]:
        """
        # Parameters

        inputs : `Dict[str, torch.Tensor]`
            What `batch_to_ids` returns for `(batch, timesteps)` words (or the same tensors by
            keyword).

        # Returns

        `{"elmo_representations": [(batch, timesteps, dim)] * num_output_representations,
        "mask": (batch, timesteps)}` (timesteps + 2 with `keep_sentence_boundaries`).
        """
        tensors = dict(inputs or {}, **kwargs)
        if not tensors:
            raise ConfigurationError(
                "ElmoC: no inputs; make them with batch_to_ids(sentences, elmo)"
            )
        return self._elmo_c(**tensors)


def batch_to_ids(
    sentences: List[List[str]], elmo: Union[ElmoC, ElmoCRepresentations]
) -> Dict[str, torch.Tensor]:
    """
    The counterpart of AllenNLP's `allennlp.modules.elmo.batch_to_ids`: a batch of tokenized
    sentences as the padded tensors `elmo` reads (`(batch, timesteps, ...)` by name). ELMo's ids
    are characters, the same for every model; ELMo-C's are the model's fastText subword rows, so
    the model is the second argument.
    """
    representations = elmo.representations if isinstance(elmo, ElmoC) else elmo
    return index_sentences(sentences, representations.word_indexer(), representations.vocab)
