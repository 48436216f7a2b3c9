"""
The environment variables our configs read with `std.extVar` (every one is listed, with who reads
it, in docs/environment-variables.md): the defaults of those that have one (`CONFIG_DEFAULTS`)
and what each one without a default must name (`REQUIRED`), for the `ConfigurationError` that
names every unset one. `allennlp_elmo_c.patches.config_defaults` makes AllenNLP's config parsing
use both.
"""

from typing import Dict, List

from allennlp.common.checks import ConfigurationError

ELMO_C_DIM = "ELMO_C_DIM"
"""The output size of the ELMo-C biLM (2 x projection size) that the downstream configs size
their layers for and check the archive against (`expected_output_dim`)."""

ELMO_C_BASELINE = "ELMO_C_BASELINE"
"""`fasttext` puts the fastText vectors where a downstream config would put ELMo-C (the
no-context baseline); anything else, e.g. the default `none`, uses ELMo-C."""

ELMO_C_FASTTEXT_DIM = "ELMO_C_FASTTEXT_DIM"
"""The size of the fastText vectors (`ELMO_C_FASTTEXT`) that a downstream config's fastText-only
row (`ELMO_C_BASELINE=fasttext`) sizes its layers for and checks the `.bin` against."""

ELMO_C_PRECISION = "ELMO_C_PRECISION"
"""The precision the pretraining configs train the biLM in (the `elmo_c` model's `precision`):
`float32`, or `bfloat16` (mixed precision: bfloat16 matrix products under autocast, on CPU or
GPU)."""

CONFIG_DEFAULTS: Dict[str, str] = {
    ELMO_C_DIM: "1024",  # the paper's biLM: 2 x 512
    ELMO_C_BASELINE: "none",  # ELMo-C, not the fastText-only baseline
    ELMO_C_FASTTEXT_DIM: "300",  # cc.en.300.bin, the paper's vectors
    ELMO_C_PRECISION: "float32",
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
"""What each variable without a default must name, for the error when it is unset."""

class UnsetVariableError(ConfigurationError, RuntimeError):
    """A config reads `std.extVar`s that are not set. A `ConfigurationError`, and still the
    `RuntimeError` jsonnet raised before (its message keeps jsonnet's words), so code that
    caught that one keeps working (`convert-config` collects every unset variable that way)."""


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
    # jsonnet's own words last, the name alone after them, for code that reads them.
    lines.append(f"jsonnet: undefined external variable: {names[0]}")
    return "\n".join(lines)
