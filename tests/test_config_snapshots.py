"""
Every shipped config (training_config/, downstream_configs/) evaluates to the JSON recorded in
tests/fixtures/configs/evaluated.json, with and without ELMO_C_BASELINE=fasttext: a config may be
recomposed (shared libsonnet files, functions), never changed by accident. A deliberate change
rewrites the record:

    python -m tests.test_config_snapshots --write

Every variable a config reads is set to a stand-in: `/NAME` for paths and text, the plugin's
default where it has one, and a number where the config parses one.
"""
import argparse
import json
import re
from typing import Dict

import _jsonnet

from allennlp_elmo_c.common.config_defaults import CONFIG_DEFAULTS
from tests import FIXTURES_ROOT, PROJECT_ROOT

RECORD = FIXTURES_ROOT / "configs" / "evaluated.json"
FOLDERS = ("training_config", "downstream_configs")
NUMBERS = {"ELMO_C_ADAPT_STEPS": "5000"}  # parsed with std.parseInt and without a default


def configs():
    return sorted(path for folder in FOLDERS for path in (PROJECT_ROOT / folder).glob("*.jsonnet"))


def stand_ins(baseline: str) -> Dict[str, str]:
    names = set()
    for path in (path for folder in FOLDERS for path in (PROJECT_ROOT / folder).glob("*sonnet")):
        names |= set(re.findall(r"std\.extVar\(\s*'([^']+)'\s*\)", path.read_text()))
    values = {name: f"/{name}" for name in names}
    return {**values, **CONFIG_DEFAULTS, **NUMBERS, "ELMO_C_BASELINE": baseline}


def evaluate_all() -> Dict[str, dict]:
    evaluated = {}
    for baseline in ("none", "fasttext"):
        variables = stand_ins(baseline)
        for path in configs():
            key = f"{path.parent.name}/{path.name} ELMO_C_BASELINE={baseline}"
            evaluated[key] = json.loads(_jsonnet.evaluate_file(str(path), ext_vars=variables))
    return evaluated


def test_every_config_evaluates_to_its_recorded_json():
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))
    evaluated = evaluate_all()
    assert sorted(evaluated) == sorted(recorded), "configs added or removed: rewrite the record"
    changed = [key for key in evaluated if evaluated[key] != recorded[key]]
    assert changed == [], f"evaluate to other JSON than recorded: {changed}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the record")
    if parser.parse_args().write:
        RECORD.write_text(json.dumps(evaluate_all(), indent=1, sort_keys=True) + "\n")
