import sys
import threading
import time

import pytest
import torch

from allennlp_elmo_c.modules.seq2seq_encoders.projected_lstm_layer import ProjectedLstmLayer
from allennlp_elmo_c.nn import buffer_pool
from allennlp_elmo_c.nn.buffer_pool import POOL, BufferPool


def idle_bytes(pool: BufferPool) -> int:
    return sum(b.numel() * b.element_size() for buffers in pool._buffers.values()
               for b in buffers.values() if buffer_pool._holders(b) == 1)  # fmt: skip


def test_a_buffer_comes_back_only_when_nothing_holds_it():
    pool = BufferPool()
    like = torch.zeros(1)
    first = pool.empty((100, 50), like)
    address = first.data_ptr()
    view = first[3:]  # a view keeps it taken too
    del first
    second = pool.empty((100, 50), like)
    assert second.data_ptr() != address
    del view
    third = pool.empty((50, 100), like)  # same size, another shape
    assert third.data_ptr() == address and third.shape == (50, 100)
    assert pool.empty((10,), like, torch.bool).dtype == torch.bool


def test_sizes_within_twice_share_and_the_pool_stays_within_twice_its_peak_use():
    pool = BufferPool()
    like = torch.zeros(1)
    big = pool.empty((100_000,), like)
    address = big.data_ptr()
    del big
    assert pool.empty((60_000,), like).data_ptr() == address  # fits, within twice
    assert pool.empty((10_000,), like).data_ptr() != address  # would waste 10x: a new one
    held = [pool.empty((1_000 * (i + 1),), like) for i in range(20)]  # 210,000 at once
    peak = sum(b.untyped_storage().nbytes() for b in held)
    del held
    for size in range(300_000, 400_000, 20_000):  # larger each time: nothing idle fits
        kept = pool.empty((size,), like)
        total = sum(b.numel() * 4 for b in pool._buffers[torch.float32].values())
        assert total <= 2 * max(peak, kept.untyped_storage().nbytes())
        assert idle_bytes(pool) > 0  # not everything evicted either
        del kept


def test_gpu_tensors_are_not_pooled():
    pool = BufferPool()
    meta = torch.zeros(1, device="meta")
    assert pool.empty((4, 4), meta).device.type == "meta"
    assert idle_bytes(pool) == 0


TAKES = 200  # per worker


def test_taking_buffers_from_threads_hands_each_out_once():
    """Four threads take and give back buffers at once: no buffer is handed to a thread while
    another one holds it. Each worker holds its buffer across a sleep (the others run then), and
    the interpreter switches threads every microsecond (inside `empty` too). The workers only
    record what they see; the checks run here, in the test's own thread (an assertion failing
    inside a worker would end only that thread)."""
    pool = BufferPool()
    like = torch.zeros(1)
    holders, lock = {}, threading.Lock()  # data_ptr -> the worker holding that buffer
    clashes, taken, errors = [], [], []
    start = threading.Barrier(4)

    def work(worker):
        try:
            start.wait()
            for _ in range(TAKES):
                buffer = pool.empty((1000,), like)
                with lock:
                    if buffer.data_ptr() in holders:
                        clashes.append((worker, holders[buffer.data_ptr()]))
                    holders[buffer.data_ptr()] = worker
                    taken.append(worker)
                time.sleep(0.0002)  # held while the other workers take theirs
                with lock:
                    if holders.get(buffer.data_ptr()) == worker:
                        del holders[buffer.data_ptr()]
                del buffer  # free again only now: the pool may hand it to another worker
        except BaseException as error:  # noqa: BLE001  (re-raised below, in the test's thread)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    if errors:
        raise errors[0]
    assert clashes == [], f"a buffer was handed to a worker while another held it: {clashes[:5]}"
    assert sorted(taken) == sorted(list(range(4)) * TAKES)  # every worker took all its buffers


def _layer():
    torch.manual_seed(3)
    return ProjectedLstmLayer(12, 32, 16, 1.0, 0.6, recurrent_dropout=0.3)  # LayerNorm inside


def _batch(seed):
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(4, 9, 12, generator=generator, requires_grad=True)
    mask = torch.arange(9).unsqueeze(0) < torch.tensor([[9], [7], [3], [1]])
    return inputs, mask


def _step(layer, seed, grad_scale=1.0):
    inputs, mask = _batch(seed)
    torch.manual_seed(seed)  # the dropout masks
    output, _ = layer(inputs, mask, None, backend="fused")
    return inputs, output, grad_scale


def _gradients(layer, inputs):
    return [inputs.grad.clone()] + [p.grad.clone() for p in layer.parameters()]


@pytest.mark.parametrize("kernels", ["1", "0"])
def test_forwards_before_one_backward_get_their_own_buffers(monkeypatch, kernels):
    """Gradient accumulation (two forwards, then their backwards in the other order) with an
    evaluation forward in between gives each batch the gradients it gets alone: no forward
    wrote into a buffer another one saved for its backward. A retained graph's second backward
    too."""
    monkeypatch.setenv("ELMO_C_CPU_KERNELS", kernels)
    layer = _layer().train()
    alone = {}
    for seed in (1, 2):
        layer.zero_grad()
        inputs, output, _ = _step(layer, seed)
        (output * (seed + 1.0)).sum().backward()
        alone[seed] = _gradients(layer, inputs)

    layer.zero_grad()
    inputs_1, output_1, _ = _step(layer, 1)
    inputs_2, output_2, _ = _step(layer, 2)
    with torch.no_grad():
        layer.eval()
        evaluation, _ = layer(*_batch(5), None, backend="fused")
        layer.train()
    assert evaluation.abs().sum() > 0
    (output_2 * 3.0).sum().backward(retain_graph=True)
    gradients_2 = _gradients(layer, inputs_2)
    layer.zero_grad()
    (output_1 * 2.0).sum().backward()
    gradients_1 = _gradients(layer, inputs_1)
    for mine, reference in zip(gradients_1, alone[1]):
        torch.testing.assert_close(mine, reference, rtol=1e-6, atol=1e-7)
    for mine, reference in zip(gradients_2[:1], alone[2][:1]):
        torch.testing.assert_close(mine, reference, rtol=1e-6, atol=1e-7)
    # Steps since then wrote into the pool; the retained graph's buffers were not among them.
    inputs_2.grad = None
    _step(layer, 7)[1].sum().backward()
    (output_2 * 3.0).sum().backward()
    torch.testing.assert_close(inputs_2.grad, alone[2][0], rtol=1e-6, atol=1e-7)


def test_steps_of_one_shape_reuse_the_same_buffers():
    """As in a training loop (the weights' gradients, pooled too, dropped between steps): after
    the first step nothing new is allocated."""
    POOL._buffers.clear()
    layer = _layer().train()
    _step(layer, 1)[1].sum().backward()
    layer.zero_grad(set_to_none=True)
    buffers = sum(len(b) for b in POOL._buffers.values())
    idle = idle_bytes(POOL)
    assert buffers > 10 and idle > 0
    for seed in (2, 3):
        _step(layer, seed)[1].sum().backward()
        layer.zero_grad(set_to_none=True)
    assert sum(len(b) for b in POOL._buffers.values()) == buffers
    assert idle_bytes(POOL) == idle


def test_a_held_storage_object_keeps_its_buffer_taken():
    pool = BufferPool()
    like = torch.zeros(1)
    buffer = pool.empty((1000,), like)
    address = buffer.data_ptr()
    storage = buffer.untyped_storage()  # the only thing left referring to the memory
    del buffer
    assert pool.empty((1000,), like).data_ptr() != address
    del storage
    assert pool.empty((1000,), like).data_ptr() == address


def test_inference_mode_and_the_default_device_do_not_leak_into_the_pool():
    """Buffers made inside `torch.inference_mode()` or under another default device are normal
    CPU tensors: a training step after an inference-mode evaluation writes into them."""
    pool = BufferPool()
    like = torch.zeros(1)
    with torch.inference_mode():
        address = pool.empty((1000,), like).data_ptr()
    again = pool.empty((1000,), like)
    assert again.data_ptr() == address and not again.is_inference()
    again.add_(1.0)  # an in-place write outside inference mode
    del again
    with torch.device("meta"):
        buffer = pool.empty((1000,), like)
    assert buffer.device.type == "cpu"
    layer = _layer().train()
    with torch.inference_mode():
        layer(*_batch(1), None, backend="fused")
    _step(layer, 2)[1].sum().backward()  # the pool's buffers from inference mode, reused


def test_fake_tensors_are_not_pooled():
    from torch._subclasses.fake_tensor import FakeTensorMode

    pool = BufferPool()
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(torch.zeros(1))
        made = pool.empty((1000,), fake)
        inside = pool.empty((1000,), torch.zeros(1))  # a real `like` while the mode traces
    assert type(made) is not torch.Tensor and type(inside) is not torch.Tensor
    assert not pool._buffers  # nothing kept
