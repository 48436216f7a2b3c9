from typing import Dict

from allennlp.modules import TextFieldEmbedder
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder
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
