"""Deterministic sentence splitting and word tokenization of raw text (`prepare-corpus`)."""

import re
import unicodedata
from typing import Iterable, Iterator, List

import spacy
from spacy.tokens import Doc
from allennlp.common.checks import ConfigurationError


# Zero-width and byte-order characters, removed before tokenizing.
_INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")
ZONE_TEXTS = 1000
ZONE_CHARACTERS = 2_000_000


class SentenceTokenizer:
    """
    Splits NFC-normalised text into sentences and tokens with spaCy's blank pipeline and its
    `sentencizer`; a quote left ending a sentence with an odd number of `"` opens the next one.

    # Parameters

    batch_size : `int`, optional (default = `64`)
        Texts spaCy processes at once.
    language : `str`, optional (default = `"en"`)
        A language code spaCy has a blank pipeline for (`xx`: language-neutral).
    """

    def __init__(self, batch_size: int = 64, language: str = "en") -> None:
        try:
            self._nlp = spacy.blank(language)
        except ImportError as error:
            if "E048" in str(error):  # spaCy has no module for the code
                raise ConfigurationError(
                    f"Unknown language code {language!r} (--language): spaCy has no blank "
                    "pipeline for it. Use a code such as en, de, fr, es, it, nl, pt, ru, el, or "
                    "xx (language-neutral rules)."
                ) from error
            raise ConfigurationError(
                f"Language {language!r} (--language) needs a word segmenter that is not "
                f"installed ({error}). Pre-tokenize the text (tokens separated by spaces, one "
                "sentence per line) and use it as it is, or pass --language xx."
            ) from error
        self._nlp.add_pipe("sentencizer")
        self._batch_size = batch_size
        self.language = language

    @staticmethod
    def normalize(text: str) -> str:
        text = unicodedata.normalize("NFC", text)
        text = _INVISIBLE.sub("", text)
        return " ".join(text.split())

    def split(self, texts: Iterable[str]) -> Iterator[List[List[str]]]:
        """Each text's sentences as lists of tokens, in groups of texts each in a spaCy memory
        zone (so memory does not grow with a long stream's distinct words)."""
        normalized = (self.normalize(text) for text in texts)
        while True:
            group: List[str] = []
            characters = 0
            for text in normalized:
                group.append(text)
                characters += len(text)
                if len(group) == ZONE_TEXTS or characters >= ZONE_CHARACTERS:
                    break
            if not group:
                return
            with self._nlp.memory_zone():
                for doc in self._nlp.pipe(group, batch_size=self._batch_size):
                    yield self._sentences(doc)

    @staticmethod
    def _sentences(doc: Doc) -> List[List[str]]:
        sentences = []
        for span in doc.sents:
            tokens = [token.text for token in span if not token.is_space]
            if tokens:
                sentences.append(tokens)
        for current, following in zip(sentences, sentences[1:]):
            if len(current) > 1 and current[-1] == '"' and current.count('"') % 2 == 1:
                following.insert(0, current.pop())
        return sentences
