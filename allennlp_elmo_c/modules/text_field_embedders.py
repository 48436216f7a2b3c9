from typing import Dict

import torch

from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder, TextFieldEmbedder
from allennlp.modules.token_embedders import TokenEmbedder

# AllenNLP's `BasicTextFieldEmbedder` registers the embedder of key `k` as the submodule
# `token_embedder_k` (the name its parameters, and so every state dict, carry).
_PREFIX = "token_embedder_"


def token_embedders(text_field_embedder: TextFieldEmbedder) -> Dict[str, TokenEmbedder]:
    """The token embedders of a `basic` (or `subset`) text field embedder by indexer key; `{}`
    for any other."""
    if not isinstance(text_field_embedder, BasicTextFieldEmbedder):
        return {}
    return {
        name[len(_PREFIX) :]: module
        for name, module in text_field_embedder.named_children()
        if name.startswith(_PREFIX) and isinstance(module, TokenEmbedder)
    }


@TextFieldEmbedder.register("subset")
class SubsetTextFieldEmbedder(BasicTextFieldEmbedder):
    """
    A `basic` text field embedder that embeds only the keys it has token embedders for, so one
    `tokens` field can feed embedders of different indexers (the `elmo_c` model's input and
    target embedders). A key it has an embedder for but the field lacks is an error.
    """

    def __init__(self, token_embedders: Dict[str, TokenEmbedder]) -> None:
        if not token_embedders:
            raise ConfigurationError("subset text field embedder: token_embedders is empty")
        super().__init__(token_embedders)

    def forward(
        self, text_field_input: TextFieldTensors, num_wrapping_dims: int = 0, **kwargs
    ) -> torch.Tensor:
        missing = sorted(set(self._token_embedders) - set(text_field_input))
        if missing:
            raise ConfigurationError(
                f"subset text field embedder: no indexer output for {missing} "
                f"(the field has {sorted(text_field_input)})"
            )
        selected = {key: text_field_input[key] for key in self._token_embedders}
        return super().forward(selected, num_wrapping_dims, **kwargs)
