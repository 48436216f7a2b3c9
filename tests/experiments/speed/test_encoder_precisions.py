"""`experiments/speed/encoder_precisions.py` at the demo size (plumbing only, no timing
assertions): each precision timed, its parts profiled, its record written."""
import json

from allennlp_elmo_c.nn import products
from experiments.speed import encoder_precisions


def test_each_precision_is_timed_and_profiled(tmp_path):
    record = tmp_path / "precisions.jsonl"
    linear = products.Products.linear
    found = encoder_precisions.main(["--size", "demo", "--batches", "4", "--repeats", "1",
                                     "--profile", "--json", str(record)])  # fmt: skip
    assert products.Products.linear is linear  # the profile is undone
    for precision in ("fp32", "bf16"):
        result = found[4][precision]
        assert result["median_seconds"] > 0 and len(result["passes"]) == 1
        assert any(name.startswith("product: ") for name in result["profile"])
    (line,) = record.read_text().splitlines()
    assert json.loads(line)["batch"] == 4 and json.loads(line)["clock"] == "cpu"
