"""
Every biLM the quality experiments pretrain, by name: its pretraining config and its label, and
what makes a system that shares its config with another one this system. Each experiment runs a
selection of them (`pretraining.SYSTEMS`, `per_minute.SYSTEMS`, `where_elmo_c_wins.SYSTEMS`, ...);
the names and labels are those of the committed reports and JSON.
"""

from typing import Dict, NamedTuple


class System(NamedTuple):
    config: str  # under training_config/
    label: str  # in the reports, the plots and the committed JSON


BILMS: Dict[str, System] = {
    "elmo_c_cosine": System("elmo_c_demo.jsonnet", "ELMo-C (continuous, cosine)"),
    "elmo_a_whole": System("elmo_a_demo.jsonnet", "ELMo-A (adaptive softmax, whole vocabulary)"),
    "allennlp_lm": System("allennlp_lm_demo.jsonnet",
                          "allennlp-models LM (char-CNN, sampled softmax)"),  # fmt: skip
    "elmo_c_vmf": System("elmo_c_demo.jsonnet", "ELMo-C (continuous, vMF)"),
    "elmo_c_in_batch": System("elmo_c_in_batch_demo.jsonnet",
                              "ELMo-C (continuous, in-batch softmax)"),  # fmt: skip
    "elmo_fixed": System("elmo_fixed_demo.jsonnet",
                         "FIXED (sampled softmax, frozen fastText outputs)"),  # fmt: skip
    "elmo_a": System("elmo_a_demo.jsonnet", "ELMo-A (adaptive softmax)"),
}
MIN_COUNT = 2  # a counting system's targets: the training data's words seen this often or more
# A system's overrides on top of its config, in every experiment that pretrains it.
OVERRIDES: Dict[str, dict] = {
    "elmo_c_vmf": {"model.output_head.loss": "vmf"},
    # The vocabulary of the training data's words.
    "elmo_a_whole": {"vocabulary.min_count.lm_targets": MIN_COUNT},
    "elmo_fixed": {"vocabulary.min_count.lm_targets": MIN_COUNT},
}


class BertShape(NamedTuple):
    layers: int
    hidden: int
    heads: int  # (the feed-forward layer: 4 x hidden, as BERT's)


# The small BERTs pretrained from scratch by `flair_comparison.py` (`bert_lm.py`): the shapes of
# Turc et al.'s (2019) BERT miniatures.
BERT_SHAPES: Dict[str, BertShape] = {
    "bert_tiny": BertShape(2, 128, 2),
    "bert_mini": BertShape(4, 256, 4),
    "bert_small": BertShape(4, 512, 8),
}
