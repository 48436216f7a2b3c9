import bz2

import pytest

from allennlp.common.checks import ConfigurationError

from experiments.corpora.wikitext import read_wiki_dump, wikitext_paragraphs
from tests.experiments.corpora.pretraining_fixtures import fixture_bytes


def test_reads_article_pages_only_as_prose():
    pages = list(read_wiki_dump(bz2.compress(fixture_bytes("enwiki.xml")), "test"))
    # The redirect and the talk page are skipped.
    assert [(page.page_id, page.title) for page in pages] == [("681", "Aardwolf")]
    assert pages[0].paragraphs == [
        "The aardwolf (Proteles cristata) is a small, insectivorous mammal, native to East and "
        'Southern Africa. Its name means "earth wolf" in Afrikaans.',
        "The aardwolf resembles a very thin striped hyena, with a more slender muzzle. See the "
        "website for more.",
    ]


@pytest.mark.parametrize(
    "wikitext, expected",
    [
        ("Text {{outer|{{inner}}}} here and more.", "Text here and more."),
        ("A [[link]] and [[target|shown text]] go on.", "A link and shown text go on."),
        ("[[File:X.jpg|thumb|A [[nested|caption]]]]Words stay here now.", "Words stay here now."),
        ("Born (; 1 April 1947) in a town.", "Born (1 April 1947) in a town."),
        ("An &amp; entity &nbsp;here now.", "An & entity here now."),
        ("Keep <i>this</i> word<sup>2</sup> ok.", "Keep this word2 ok."),
        ("Math <math>x^2</math> dropped here too.", "Math dropped here too."),
    ],
)
def test_markup_is_stripped(wikitext, expected):
    assert wikitext_paragraphs(wikitext) == [expected]


def test_headings_lists_tables_and_reference_sections():
    wikitext = (
        "Intro sentence with enough words.\n== History ==\nHistory sentence with words.\n"
        "* a list item with words\n{| class=x\n| cell || cell\n|}\n"
        "=== Sub ===\nSub sentence with enough words.\n== See also ==\nGone sentence with words."
    )
    assert wikitext_paragraphs(wikitext) == [
        "Intro sentence with enough words.",
        "History sentence with words.",
        "Sub sentence with enough words.",
    ]


def test_invalid_dump():
    with pytest.raises(ConfigurationError, match="not a valid MediaWiki XML dump"):
        list(read_wiki_dump(b"<mediawiki><page>", "test"))
    with pytest.raises(ConfigurationError, match="not valid bz2"):
        list(read_wiki_dump(b"BZh9 broken", "test"))
