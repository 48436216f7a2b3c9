import math
import random

import pytest
import torch

from allennlp_elmo_c.nn.hashed_normal import (
    GOLDEN_GAMMA,
    hashed_normal,
    hashed_random_bits,
    shift_right_logical,
    splitmix64_mix,
    to_int64,
)

MASK = (1 << 64) - 1
EDGE_KEYS = [0, 1, -1, 2**63 - 1, -(2**63), 0x0123456789ABCDEF, -0x0123456789ABCDEF]


def _mix(z: int) -> int:
    # splitmix64's output function on unsigned Python ints (Steele et al. 2014; Vigna's
    # splitmix64.c), written from the published constants, independently of the torch code.
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def _reference_bits(key: int, count: int, seed: int) -> list:
    """The documented construction in unsigned Python arithmetic."""
    seed_key = _mix((seed ^ 0x5851F42D4C957F2D) & MASK)
    state = _mix((key & MASK) ^ seed_key)
    return [_mix((state + i * 0x9E3779B97F4A7C15) & MASK) for i in range(1, count + 1)]


def _unsigned(values: torch.Tensor) -> list:
    return [value & MASK for value in values.reshape(-1).tolist()]


def test_splitmix64_matches_the_published_sequence():
    # Java's SplittableRandom / splitmix64.c with seed 1234567: state += gamma, output mix(state).
    expected = [
        6457827717110365317,
        3203168211198807973,
        9817491932198370423,
        4593380528125082431,
        16408922859458223821,
    ]
    states = torch.tensor(1234567) + torch.arange(1, 6) * GOLDEN_GAMMA
    assert _unsigned(splitmix64_mix(states)) == expected


def test_int64_arithmetic_matches_unsigned_arithmetic():
    rng = random.Random(0)
    keys = EDGE_KEYS + [to_int64(rng.getrandbits(64)) for _ in range(500)]
    tensor = torch.tensor(keys, dtype=torch.int64)
    assert _unsigned(splitmix64_mix(tensor)) == [_mix(key & MASK) for key in keys]
    for bits in (1, 11, 27, 30, 31, 63):
        assert _unsigned(shift_right_logical(tensor, bits)) == [(k & MASK) >> bits for k in keys]


@pytest.mark.parametrize("seed", [0, 7, -1, 2**70 + 5])
def test_streams_match_the_reference(seed):
    rng = random.Random(1)
    keys = EDGE_KEYS + [to_int64(rng.getrandbits(64)) for _ in range(50)]
    bits = hashed_random_bits(torch.tensor(keys, dtype=torch.int64), 6, seed)
    assert bits.shape == (len(keys), 6)
    for key, row in zip(keys, bits):
        assert _unsigned(row) == _reference_bits(key, 6, seed)


def test_normals_match_box_muller_on_the_reference_bits():
    keys = EDGE_KEYS + list(range(2, 40))
    dim = 7  # odd: the last pair's sine is dropped
    values = hashed_normal(torch.tensor(keys, dtype=torch.int64), dim, seed=3)
    assert values.shape == (len(keys), dim) and values.dtype == torch.float32
    for key, row in zip(keys, values):
        bits = _reference_bits(key, 8, 3)
        uniforms = [(b >> 11) * 2.0**-53 for b in bits]
        radius = [math.sqrt(-2.0 * math.log1p(-u)) for u in uniforms[:4]]
        angle = [2.0 * math.pi * u for u in uniforms[4:]]
        expected = [r * math.cos(a) for r, a in zip(radius, angle)]
        expected += [r * math.sin(a) for r, a in zip(radius, angle)]
        torch.testing.assert_close(row, torch.tensor(expected[:dim]), atol=1e-6, rtol=1e-6)


def test_any_shape_and_dtype():
    keys = torch.arange(1, 13, dtype=torch.int64).view(3, 4)
    values = hashed_normal(keys, 5, dtype=torch.float64)
    assert values.shape == (3, 4, 5) and values.dtype == torch.float64
    torch.testing.assert_close(values.float()[1, 2], hashed_normal(torch.tensor([7]), 5)[0])
    assert torch.isfinite(values).all()


def test_keys_must_be_int64():
    with pytest.raises(TypeError, match="int64"):
        hashed_normal(torch.arange(3, dtype=torch.int32), 4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_same_numbers_on_the_gpu():
    rng = random.Random(2)
    keys = torch.tensor(EDGE_KEYS + [to_int64(rng.getrandbits(64)) for _ in range(5000)])
    cpu_bits = hashed_random_bits(keys, 8, seed=11)
    assert torch.equal(hashed_random_bits(keys.cuda(), 8, seed=11).cpu(), cpu_bits)
    cpu = hashed_normal(keys, 300, seed=11)
    gpu = hashed_normal(keys.cuda(), 300, seed=11).cpu()
    torch.testing.assert_close(gpu, cpu, atol=1e-6, rtol=0)
