"""
Running prose out of a MediaWiki XML dump (`pages-articles`, optionally bz2-compressed): article
pages only (no redirects, no other namespaces), with templates, tables, references, comments,
files, categories, interlanguage links, lists, headings and the trailing reference sections
removed, and links replaced by their text. It is a reasonable approximation for language-model
text, not a full wikitext parser.
"""

import bz2
import html
import io
import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from typing import Iterator, List

from allennlp.common.checks import ConfigurationError


# Sections after which an article holds no more running prose.
END_SECTIONS = frozenset(
    (
        "see also",
        "references",
        "notes",
        "notes and references",
        "footnotes",
        "citations",
        "sources",
        "bibliography",
        "further reading",
        "external links",
        "works cited",
    )
)
# Link namespaces whose links are not text.
_DROPPED_NAMESPACES = frozenset(("file", "image", "category", "media"))
_INTERLANGUAGE = re.compile(r"[a-z]{2,3}(?:-[a-z]+)*|simple")
_MIN_PARAGRAPH_WORDS = 4

_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
_REF = re.compile(r"<ref\b[^>]*/\s*>|<ref\b[^>]*>.*?</ref\s*>", re.S | re.I)
_DROPPED_ELEMENT = re.compile(
    r"<(math|gallery|timeline|imagemap|syntaxhighlight|source|pre|score|hiero|chem|ce|graph|"
    r"mapframe|templatedata|references)\b[^>]*?(?:/>|>.*?</\1\s*>)",
    re.S | re.I,
)
_TAG = re.compile(r"</?[a-zA-Z][^<>]*?/?>")
_TEMPLATE = re.compile(r"\{\{(?:(?!\{\{|\}\}).)*\}\}", re.S)
_TABLE = re.compile(r"\{\|(?:(?!\{\||\|\}).)*\|\}", re.S)
_LINK = re.compile(r"\[\[([^\[\]]*)\]\]")
_EXTERNAL_LINK = re.compile(r"\[(?:https?:|ftp:)?//[^\s\[\]]*\s*([^\[\]]*)\]")
_BARE_URL = re.compile(r"https?://\S+")
_EMPHASIS = re.compile(r"'{2,}")
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
_HEADING = re.compile(r"(={2,6})\s*(.*?)\s*\1")
_NON_PROSE_LINE = re.compile(r"[*#:;|!{}]")
_EMPTY_BRACKETS = re.compile(r"\(\s*[,;]?\s*\)")
_LEADING_SEPARATOR = re.compile(r"\(\s*[,;]\s*")


@dataclass(frozen=True)
class WikiPage:
    page_id: str
    title: str
    paragraphs: List[str]


def _link_text(match: "re.Match[str]") -> str:
    target, *labels = match.group(1).split("|")
    stripped = target.strip()
    if stripped.startswith(":"):  # [[:Category:X]] is a visible link to the category page
        return (labels[-1] if labels else stripped[1:]).strip()
    prefix, colon, _ = stripped.partition(":")
    if colon:
        if prefix.strip().lower() in _DROPPED_NAMESPACES:
            return ""
        if not labels and _INTERLANGUAGE.fullmatch(prefix.strip()):
            return ""
    return (labels[-1] if labels else stripped).strip()


def _repeat(pattern: "re.Pattern[str]", replacement, text: str) -> str:
    """Applies `pattern` until nothing changes (innermost constructs first, for nesting)."""
    while True:
        text, count = pattern.subn(replacement, text)
        if not count:
            return text


def wikitext_paragraphs(wikitext: str) -> List[str]:
    """The paragraphs of running prose in one article's wikitext (see the module docstring)."""
    text = _COMMENT.sub("", wikitext)
    text = _REF.sub("", text)
    text = _DROPPED_ELEMENT.sub("", text)
    text = _repeat(_TEMPLATE, "", text)
    text = _repeat(_TABLE, "", text)
    text = _EXTERNAL_LINK.sub(lambda match: match.group(1), text)
    text = _repeat(_LINK, _link_text, text)
    text = _TAG.sub("", text)
    text = _MAGIC_WORD.sub("", text)
    text = _EMPHASIS.sub("", text)

    paragraphs: List[str] = []
    current: List[str] = []

    def flush() -> None:
        paragraph = " ".join(" ".join(current).split())
        paragraph = _EMPTY_BRACKETS.sub("", html.unescape(paragraph))
        paragraph = _LEADING_SEPARATOR.sub("(", paragraph)
        paragraph = _BARE_URL.sub("", paragraph)
        paragraph = " ".join(paragraph.split())
        if len(paragraph.split()) >= _MIN_PARAGRAPH_WORDS:
            paragraphs.append(paragraph)
        current.clear()

    for line in text.splitlines():
        stripped = line.strip()
        heading = _HEADING.fullmatch(stripped)
        if heading:
            flush()
            if len(heading.group(1)) == 2 and heading.group(2).strip().lower() in END_SECTIONS:
                break
            continue
        if not stripped or _NON_PROSE_LINE.match(stripped):
            flush()
            continue
        current.append(stripped)
    flush()
    return paragraphs


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def read_wiki_dump(raw: bytes, origin: str) -> Iterator[WikiPage]:
    """
    Yields the article pages (namespace 0, not redirects) of a MediaWiki XML dump, in dump order.
    `raw` may be bz2-compressed. Pages with no prose left after cleaning are skipped.
    """
    if raw[:3] == b"BZh":
        try:
            raw = bz2.decompress(raw)
        except (OSError, ValueError, EOFError) as error:
            raise ConfigurationError(f"{origin}: not valid bz2 ({error})") from error
    try:
        for _, element in ElementTree.iterparse(io.BytesIO(raw), events=("end",)):
            if _local(element.tag) != "page":
                continue
            fields = {_local(child.tag): child for child in element}
            namespace = (fields["ns"].text or "").strip() if "ns" in fields else "0"
            revision = fields.get("revision")
            text_element = None
            if revision is not None:
                text_element = next(
                    (child for child in revision if _local(child.tag) == "text"), None
                )
            wikitext = (text_element.text or "") if text_element is not None else ""
            is_redirect = "redirect" in fields or wikitext.lstrip().upper().startswith("#REDIRECT")
            if namespace == "0" and not is_redirect:
                paragraphs = wikitext_paragraphs(wikitext)
                if paragraphs:
                    page_id = (fields["id"].text or "").strip() if "id" in fields else ""
                    title = (fields["title"].text or "").strip() if "title" in fields else ""
                    yield WikiPage(page_id or title, title, paragraphs)
            element.clear()
    except ElementTree.ParseError as error:
        raise ConfigurationError(f"{origin}: not a valid MediaWiki XML dump ({error})") from error
