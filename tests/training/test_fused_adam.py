"""
`fused_adam` computes AllenNLP's `adam` update: after 20 updates with changing gradients (weight
decay, two parameter groups), it is as close to a float64 run of the update as AllenNLP's own
float32 `adam` is (at most twice its error).
"""
import torch

from allennlp.common import Params
from allennlp.training.optimizers import Optimizer

from allennlp_elmo_c.training.fused_adam import FusedAdamOptimizer

SHAPES = [(64, 32), (32,), (128, 16), (7,)]


def run(optimizer_params: dict, dtype: torch.dtype, steps: int = 20):
    generator = torch.Generator().manual_seed(0)
    parameters = [torch.nn.Parameter(torch.randn(s, generator=generator, dtype=torch.float64)
                                     .to(dtype)) for s in SHAPES]  # fmt: skip
    named = [(f"layer{i}.weight" if len(s) > 1 else f"layer{i}.bias", p)
             for i, (s, p) in enumerate(zip(SHAPES, parameters))]  # fmt: skip
    params = Params({
        "lr": 1e-2, "eps": 1e-6, "weight_decay": 0.01,
        "parameter_groups": [[["bias"], {"lr": 3e-2}]], **optimizer_params,
    })  # fmt: skip
    optimizer = Optimizer.from_params(model_parameters=named, params=params)
    for step in range(steps):
        for parameter in parameters:
            noise = torch.randn(parameter.shape, generator=generator, dtype=torch.float64)
            parameter.grad = (parameter.detach().double() * 0.1 + noise * (step + 1)).to(dtype)
        optimizer.step()
    return optimizer, [p.detach().double() for p in parameters]


def largest_error(ours, exact):
    return max((a - b).abs().max().item() for a, b in zip(ours, exact))


def test_the_same_update_as_allennlps_adam():
    _, exact = run({"type": "adam"}, torch.float64)
    _, allennlp = run({"type": "adam"}, torch.float32)
    optimizer, ours = run({"type": "fused_adam"}, torch.float32)
    assert isinstance(optimizer, FusedAdamOptimizer) and optimizer.defaults["fused"]
    reference = largest_error(allennlp, exact)
    assert 0 < reference < 1e-4  # float32 rounding
    assert largest_error(ours, exact) <= 2 * reference
    # Not the same numbers as a different update: a wrong epsilon is far off.
    _, other = run({"type": "fused_adam", "eps": 1e-3}, torch.float32)
    assert largest_error(other, exact) > 100 * reference


def test_every_pretraining_config_uses_it():
    """The pretraining configs (and the ones composed from them) update with `fused_adam`; the
    peer (`allennlp_lm_demo.jsonnet`) keeps `dense_sparse_adam`, as its users run it."""
    from tests import PROJECT_ROOT

    for config in sorted((PROJECT_ROOT / "training_config").glob("*.jsonnet")):
        text = config.read_text(encoding="utf-8")
        assert "type: 'adam'" not in text and '"type": "adam"' not in text, config.name
    assert "fused_adam" in (PROJECT_ROOT / "training_config" / "elmo_c.jsonnet").read_text()
