"""The graph cache's bookkeeping (capture itself needs a GPU: see test_backend_agreement.py)."""
import pytest
import torch

from allennlp_elmo_c.nn import cuda_graphs


@pytest.fixture(autouse=True)
def empty_cache():
    cuda_graphs.clear()
    yield
    cuda_graphs.clear()


def test_a_shape_runs_eagerly_until_seen_capture_after_times(monkeypatch):
    calls = []

    def function(x):
        calls.append(x)
        return (x * 2,)

    x = torch.ones(3)
    for _ in range(cuda_graphs.CAPTURE_AFTER - 1):
        (out,) = cuda_graphs.replay("key", function, (x,))
        assert calls[-1] is x and torch.equal(out, x * 2)  # eager, on the caller's tensor
    assert not cuda_graphs._graphs
    # Other shapes and other keys are counted apart.
    cuda_graphs.replay("key", function, (torch.ones(4),))
    cuda_graphs.replay("other", function, (x,))
    assert max(cuda_graphs._seen.values()) == cuda_graphs.CAPTURE_AFTER - 1


def test_the_key_holds_matmul_precision_and_inference_mode():
    x = [torch.ones(2)]
    plain = cuda_graphs._signature(x)
    with torch.inference_mode():
        assert cuda_graphs._signature(x) != plain
    before = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = not before
        assert cuda_graphs._signature(x) != plain
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    assert cuda_graphs._signature(x) == plain
    assert cuda_graphs._signature([torch.ones(3)]) != plain
