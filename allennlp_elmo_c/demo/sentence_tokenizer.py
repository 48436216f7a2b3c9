"""
Deterministic sentence splitting and word tokenization of raw English text, used to turn raw
prose into the "one tokenized sentence per line" format of our corpora.
"""

import re
import unicodedata
from typing import Iterable, Iterator, List

import spacy


# Zero-width and byte-order characters carry no text; they are removed before tokenizing.
_INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")


class SentenceTokenizer:
    """
    Splits raw text into sentences and sentences into tokens with spaCy's rule-based English
    tokenizer and its punctuation-based `sentencizer`. No statistical model is needed (nothing is
    downloaded), and the output depends only on the input and the pinned spaCy version.

    The sentencizer attaches a quote that follows sentence-final punctuation to the sentence it
    ends; when that leaves the sentence with an odd number of `"` tokens, the quote actually opens
    the next sentence and is moved there.

    Text is NFC-normalised, whitespace runs (including non-breaking spaces and newlines) are
    treated as single spaces, zero-width characters are dropped, and tokens that are pure
    whitespace are never emitted.

    # Parameters

    batch_size : `int`, optional (default = `64`)
        Number of texts spaCy processes at once.
    """

    def __init__(self, batch_size: int = 64) -> None:
        self._nlp = spacy.blank("en")
        self._nlp.add_pipe("sentencizer")
        self._batch_size = batch_size

    @staticmethod
    def normalize(text: str) -> str:
        text = unicodedata.normalize("NFC", text)
        text = _INVISIBLE.sub("", text)
        return " ".join(text.split())

    def split(self, texts: Iterable[str]) -> Iterator[List[List[str]]]:
        """
        Yields, for each input text, its sentences as lists of tokens (empty list for a text with
        no tokens).
        """
        normalized = (self.normalize(text) for text in texts)
        for doc in self._nlp.pipe(normalized, batch_size=self._batch_size):
            sentences = []
            for span in doc.sents:
                tokens = [token.text for token in span if not token.is_space]
                if tokens:
                    sentences.append(tokens)
            for current, following in zip(sentences, sentences[1:]):
                if len(current) > 1 and current[-1] == '"' and current.count('"') % 2 == 1:
                    following.insert(0, current.pop())
            yield sentences
