"""
Standard normal vectors that are a pure function of a 64-bit key, the same on every device: each
key seeds a splitmix64 stream, output i = `mix(mix(key ^ mix(seed ^ salt)) + i * GOLDEN_GAMMA)`
(unsigned arithmetic on int64 tensors), and Box-Muller turns the top 53 bits of two outputs into
two N(0, 1) values (in float64).
"""

import math

import torch

_MASK64 = (1 << 64) - 1


def to_int64(value: int) -> int:
    """`value` mod 2^64 as the signed int64 with the same bits."""
    value &= _MASK64
    return value - (1 << 64) if value >= 1 << 63 else value


GOLDEN_GAMMA = to_int64(0x9E3779B97F4A7C15)
_MIX_1 = to_int64(0xBF58476D1CE4E5B9)
_MIX_2 = to_int64(0x94D049BB133111EB)
# Keeps the seed's stream family apart from a plain splitmix64 seeded with the key itself.
_SEED_SALT = to_int64(0x5851F42D4C957F2D)


def shift_right_logical(values: torch.Tensor, bits: int) -> torch.Tensor:
    """Unsigned `values >> bits` for int64 tensors holding unsigned 64-bit patterns."""
    return (values >> bits) & ((1 << (64 - bits)) - 1)


def splitmix64_mix(values: torch.Tensor) -> torch.Tensor:
    """splitmix64's output function (a bijection of 64-bit patterns) on an int64 tensor."""
    values = (values ^ shift_right_logical(values, 30)) * _MIX_1
    values = (values ^ shift_right_logical(values, 27)) * _MIX_2
    return values ^ shift_right_logical(values, 31)


def hashed_random_bits(keys: torch.Tensor, count: int, seed: int = 0) -> torch.Tensor:
    """The first `count` outputs `(..., count)` of the splitmix64 stream of each int64 key
    `(...)` under `seed` (any int)."""
    if keys.dtype != torch.int64:
        raise TypeError(f"hashed_random_bits needs int64 keys, got {keys.dtype}")
    seed_key = splitmix64_mix(torch.tensor(to_int64(seed ^ _SEED_SALT), dtype=torch.int64))
    streams = splitmix64_mix(keys ^ seed_key.to(keys.device))
    steps = torch.arange(1, count + 1, dtype=torch.int64, device=keys.device) * GOLDEN_GAMMA
    return splitmix64_mix(streams.unsqueeze(-1) + steps)


def hashed_normal(
    keys: torch.Tensor, dim: int, seed: int = 0, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """A standard normal vector `(..., dim)` of `dtype` per int64 key `(...)`, a function of
    (key, seed, dim) alone."""
    pairs = (dim + 1) // 2
    bits = hashed_random_bits(keys, 2 * pairs, seed)
    # 53-bit uniforms in [0, 1); 1 - u lies in (0, 1], so the logarithm is finite.
    uniform = shift_right_logical(bits, 11).to(torch.float64) * 2.0**-53
    radius = torch.sqrt(-2.0 * torch.log1p(-uniform[..., :pairs]))
    angle = (2.0 * math.pi) * uniform[..., pairs:]
    normal = torch.cat([radius * torch.cos(angle), radius * torch.sin(angle)], dim=-1)
    return normal[..., :dim].to(dtype)
