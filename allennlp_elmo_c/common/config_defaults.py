"""
The environment variables the plugin's configs read (docs/environment-variables.md): the defaults
of those that have one (`CONFIG_DEFAULTS`) and what each other one must name (`REQUIRED`), used
by `allennlp_elmo_c.patches.config_defaults`.
"""

from typing import Dict, List

from allennlp.common.checks import ConfigurationError

ELMO_C_DIM = "ELMO_C_DIM"
ELMO_C_PRECISION = "ELMO_C_PRECISION"

CONFIG_DEFAULTS: Dict[str, str] = {
    ELMO_C_DIM: "1024",  # the biLM's output size (2 x projection) downstream configs expect
    "ELMO_C_BASELINE": "none",  # `fasttext`: the fastText-only row instead of ELMo-C
    "ELMO_C_FASTTEXT_DIM": "300",  # the fastText vectors' size, for that row
    ELMO_C_PRECISION: "float32",  # or bfloat16
}

_DATA = "a file of one tokenized sentence per line (a glob pattern of shards works too)"
REQUIRED: Dict[str, str] = {
    "ELMO_C_TRAIN_DATA": f"the pretraining text: {_DATA}",
    "ELMO_C_VALIDATION_DATA": f"the held-out text: {_DATA}",
    "ELMO_C_FASTTEXT": "a fastText .bin with subwords (`train-fasttext`, or fastText's "
    "cc.*.300.bin)",
    "ELMO_C_SOURCE_ARCHIVE": "the ELMo-C archive (model.tar.gz) to continue pretraining",
    "ELMO_C_ADAPT_STEPS": "the run's optimizer updates: words of the new text / (20 x 128) per "
    "epoch",
    "ELMO_C_DATA_DIR": "the demo data directory as `make demo` leaves it (news/, "
    "fasttext/news.100d.bin, fasttext/frequent_words.txt)",
    "ELMO_C_BPE": "the BPE tokenizer.json written by `train-bpe`",
    "ELMO_C_VOCABULARY": "the BPE vocabulary directory written by `train-bpe`",
    "ELMO_C_ELMO_OPTIONS": "an ELMo options .json (elmo_2x4096_512_2048cnn_2xhighway_options.json)",
    "ELMO_C_ELMO_WEIGHTS": "the ELMo weights .hdf5 that goes with the options file",
    "ELMO_C_ARCHIVE": "the pretrained biLM: a model.tar.gz or a model directory (`package`); "
    "or ELMO_C_BASELINE=fasttext for the fastText-only row",
    "NER_TRAIN_DATA_PATH": "the NER training file (CoNLL-2003 format)",
    "NER_TEST_DATA_PATH": "the NER validation file (CoNLL-2003 format)",
    "GLOVE_50D": "glove.6B.50d.txt(.gz), downloaded by you",
    "POS_DATA_DIR": "a directory with train.txt and dev.txt of word###tag sentences",
    "SNLI_TRAIN": "snli_1.0_train.jsonl",
    "SNLI_DEV": "snli_1.0_dev.jsonl",
    "SRL_TRAIN_DATA_PATH": "the CoNLL-2012 training directory",
    "SRL_VALIDATION_DATA_PATH": "the CoNLL-2012 development directory",
    "SST_TRAIN": "the SST training trees (train.txt)",
    "SST_DEV": "the SST development trees (dev.txt)",
    "SST_TEST": "the SST test trees (test.txt)",
    "STSB_TRAIN": (
        "the STS-B training pairs (train.tsv of `experiments/quality/table2.py --tasks stsb`)"
    ),
    "STSB_DEV": "the STS-B development pairs (dev.tsv)",
    "STSB_TEST": "the STS-B test pairs (test.tsv)",
    "GLOVE_840B_300D": "glove.840B.300d.txt(.gz), downloaded by you",
    "COREF_TRAIN_DATA_PATH": "the CoNLL-2012 coreference training file",
    "COREF_DEV_DATA_PATH": "the CoNLL-2012 coreference development file",
    "COREF_TEST_DATA_PATH": "the CoNLL-2012 coreference test file",
    "GLOVE_6B_300D": "glove.6B.300d.txt(.gz), downloaded by you",
}

class UnsetVariableError(ConfigurationError, RuntimeError):
    """A config reads `std.extVar`s that are not set; still jsonnet's `RuntimeError`, its words
    last (`convert-config` catches it so)."""


def unset_variable_message(config: str, names: List[str]) -> str:
    what = "these environment variables" if len(names) > 1 else "the environment variable"
    lines = [f"{config} reads {what} (std.extVar), not set: {', '.join(names)}"]
    for name in names:
        lines.append(f"  {name}: {REQUIRED.get(name, 'see the comment at the top of the config')}")
    example = " ".join(f"{name}=..." for name in names)
    them = "them" if len(names) > 1 else "it"
    lines.append(
        f"Set {them} in the environment ({example} allennlp train ...) "
        "or pass ext_vars; every variable: docs/environment-variables.md."
    )
    lines.append(f"jsonnet: undefined external variable: {names[0]}")
    return "\n".join(lines)
