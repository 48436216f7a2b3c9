from typing import List, Optional, Protocol, runtime_checkable

import torch


@runtime_checkable
class StringEmbedder(Protocol):
    """A token embedder that embeds any strings outside a batch: the sentence boundary
    vectors downstream and the `nearest_neighbour_words` candidates use it."""

    def embed_strings(
        self, words: List[str], device: Optional[torch.device] = None
    ) -> torch.Tensor:
        """`(len(words), output_dim)`."""
        ...
