"""
The components a received task archive may build (`TASK_COMPONENTS`): the registered `type`
names of the AllenNLP and allennlp-models components the task configs of `downstream_configs/`
use, a few generic AllenNLP modules beside them, and the plugin's own task-side components, each
with the keys of its constructor that name something to load. `check_task_config`
(`received.received_config`) refuses any other `type` in a task archive's built sections, and holds
each key named here to its rule:

- `HUB_MODEL`: the name reaches Hugging Face's `from_pretrained` (a `pretrained_transformer*`
  component's `model_name`, the `srl` reader's `bert_model_name`): a published model's name,
  never a local path (a directory would be loaded as the model); `received.hub_models` finds one
  missing from the cache before anything is built;
- `SPACY_MODEL`: the name reaches `spacy.load` (a `spacy` tokenizer's `language`): a published
  pipeline's name, never a local path;
- `NOT_RECEIVED`: a file or program outside the model (`srl`'s `srl_eval_path`, a Perl script
  the metric runs; `bcn`'s `elmo`, an ELMo read from the paths it names): refused unless absent
  or null;
- `PLUGIN_FILE`: a file of the plugin's own component, found by the plugin's loaders: while a
  task archive is loaded, `elmo_c_token_embedder` builds its biLM from the record the archive
  keeps (checked as a received biLM), never from the biLM archive at the path, and a fastText
  `.bin` is the copy the archive bundles, else the file at the path, which must match the
  fingerprint the config records.

A component without `type` is its place's default (`single_id`, `embedding`, `basic`, `spacy`,
a plain feedforward): its `language` is a `SPACY_MODEL`. Every other key of an allowed component
is a plain value, or a component checked in turn.
"""

from typing import Dict

HUB_MODEL = "hub_model"
SPACY_MODEL = "spacy_model"
NOT_RECEIVED = "not_received"
PLUGIN_FILE = "plugin_file"

_NONE: Dict[str, str] = {}
_TRANSFORMER = {"model_name": HUB_MODEL}

# Registered type name -> its keys that name something to load -> their rule. A name that
# several places register (`srl`, a reader and a model; `spacy`, a tokenizer and an indexer)
# has the keys of all of them.
TASK_COMPONENTS: Dict[str, Dict[str, str]] = {
    # models
    "basic_classifier": _NONE,
    "bcn": {"elmo": NOT_RECEIVED},
    "coref": _NONE,
    "crf_tagger": _NONE,
    "esim": _NONE,
    "simple_tagger": _NONE,
    "srl": {"srl_eval_path": NOT_RECEIVED, "bert_model_name": HUB_MODEL},
    # dataset readers
    "conll2003": _NONE,
    "quora_paraphrase": _NONE,
    "sequence_tagging": _NONE,
    "snli": _NONE,
    "sst_tokens": _NONE,
    "text_classification_json": _NONE,
    # tokenizers
    "just_spaces": _NONE,
    "spacy": {"language": SPACY_MODEL},
    "whitespace": _NONE,
    "pretrained_transformer": _TRANSFORMER,
    # token indexers
    "characters": _NONE,
    "elmo_characters": _NONE,
    "single_id": _NONE,
    "pretrained_transformer_mismatched": _TRANSFORMER,
    "fasttext_subwords": {"archive_file": PLUGIN_FILE, "model_path": PLUGIN_FILE},
    "word_hash": _NONE,
    # text field embedders, token embedders
    "basic": _NONE,
    "subset": _NONE,
    "character_encoding": _NONE,
    "embedding": _NONE,  # its `pretrained_file`: removed by AllenNLP's loader (received_config)
    "pass_through": _NONE,
    "elmo_c_token_embedder": {
        "archive_file": PLUGIN_FILE, "fasttext_path": PLUGIN_FILE, "tokenizer_path": PLUGIN_FILE,
    },
    "fasttext": {"model_path": PLUGIN_FILE},
    "random_vectors": _NONE,
    "slim_embedding": _NONE,
    # the peer biLM: allennlp-models' language_model over the plugin's corpus reader
    # (training_config/allennlp_lm_demo.jsonnet), read back by evaluate and the quality lab
    # (the name is also the `language_model` data collator's, whose model_name is a tokenizer's)
    "language_model": _TRANSFORMER,
    "lm_corpus": _NONE,
    "empty": _NONE,
    "cnn-highway": _NONE,
    "allennlp_elmo_lstm": _NONE,
    # encoders, attention, regularizers
    "alternating_lstm": _NONE,
    "boe": _NONE,
    "cnn": _NONE,
    "feedforward": _NONE,
    "gru": _NONE,
    "lstm": _NONE,
    "bilinear": _NONE,
    "cosine": _NONE,
    "dot_product": _NONE,
    "linear": _NONE,
    "l1": _NONE,
    "l2": _NONE,
}  # fmt: skip
# The keys of a component without `type` (its place's default) that name something to load.
UNTYPED_KEYS = {"language": SPACY_MODEL}
