"""`experiments/speed/product_libraries.py` at smoke size (plumbing only, no timing assertions):
the AVX2 caps reach torch in the measuring processes, the default library follows
`products.onednn_preferred`, and the report renders from the JSON alone."""
import pytest
import torch

from experiments.speed import product_libraries


def test_capped_rows_run_avx2_code_and_the_report_renders_from_the_json(tmp_path):
    if torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"):
        pytest.skip("the AVX2 cap needs an x86-64 CPU with AVX2")
    json_path, report = tmp_path / "product_libraries.json", tmp_path / "RESULTS.md"
    report.write_text("# Results\n\nkept\n")
    data = product_libraries.main(["--sizes", "small", "--isas", "avx2", "--steps", "1",
                                   "--warmup", "0", "--scale", "0.1", "--json", str(json_path),
                                   "--report", str(report)])  # fmt: skip
    (row,) = data["rows"]
    assert row["capability"] == "AVX2" and row["default"] == "torch.mm"
    assert (row["batch"], row["timesteps"]) == (6, 3)
    assert set(row["tokens_per_second"]) == {"reference", "fused_torch_mm", "fused_onednn", "floor"}
    assert all(speed > 0 for speed in row["tokens_per_second"].values())
    written = report.read_text()
    assert written.startswith("# Results\n\nkept\n")
    assert "| small, 6 x 3 | AVX2 | " in written and "| torch.mm | " in written
    again = tmp_path / "again.md"
    product_libraries.main(["--render", "--json", str(json_path), "--report", str(again)])
    assert again.read_text() in written
