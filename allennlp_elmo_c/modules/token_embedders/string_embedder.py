from typing import List, Optional, Protocol, runtime_checkable

import torch


@runtime_checkable
class StringEmbedder(Protocol):
    """
    A token embedder that can embed arbitrary strings outside a batch (`fasttext`,
    `elmo_char_cnn`, `slim_embedding`, `random_vectors`): what makes the sentence boundary
    vectors downstream and the `nearest_neighbour_words` candidates of the `elmo_c` model.
    """

    def embed_strings(
        self, words: List[str], device: Optional[torch.device] = None
    ) -> torch.Tensor:
        """The vectors of `words`, `(len(words), output_dim)`."""
        ...
