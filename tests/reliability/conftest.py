from pathlib import Path

from tests import FIXTURES_ROOT

LM_DATA = FIXTURES_ROOT / "data" / "lm"

# Overrides for training_config/elmo_c_demo.jsonnet on `make_demo_data_dir`'s data: the fixture
# fastText model is 16-d (the demo's is 100-d); the corpus makes 15 windows of 21 tokens, so
# 2 windows a batch give 8 batches an epoch.
DEMO_AT_FIXTURE_SIZE = {
    "model.text_field_embedder.token_embedders.tokens.expected_dim": 16,
    "model.contextualizer.input_size": 16,
    "data_loader.batch_size": 2,
}


def make_demo_data_dir(root: Path) -> Path:
    """The layout `training_config/elmo_c_demo.jsonnet` reads from ELMO_C_DATA_DIR (`make demo`
    builds the real one), filled with the fixture corpus and the 16-d fixture fastText model:
    override the config's `expected_dim` and `input_size` to 16."""
    (root / "news").mkdir(parents=True)
    (root / "fasttext").mkdir()
    (root / "news" / "train.txt").write_bytes((LM_DATA / "sentences.txt").read_bytes())
    (root / "news" / "dev.txt").write_bytes((LM_DATA / "dev.txt").read_bytes())
    (root / "fasttext" / "news.100d.bin").symlink_to(FIXTURES_ROOT / "fasttext" / "tiny.bin")
    (root / "fasttext" / "frequent_words.txt").symlink_to(LM_DATA / "candidates.txt")
    return root
