"""
`permute`: a permutation along one dimension whose gradient goes back by the inverse
permutation, a gather (rather than autograd's scatter-add into zeros).
"""
import torch


class _Permute(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx, tensor: torch.Tensor, dim: int, index: torch.Tensor, inverse: torch.Tensor
    ) -> torch.Tensor:
        ctx.dim, ctx.inverse = dim, inverse
        return _take(tensor, dim, index)

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        return _take(grad, ctx.dim, ctx.inverse), None, None, None


def _take(tensor: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    return tensor.index_select(dim, index) if index.dim() == 1 else tensor.gather(dim, index)


def permute(
    tensor: torch.Tensor, dim: int, index: torch.Tensor, inverse: torch.Tensor
) -> torch.Tensor:
    """`tensor.index_select(dim, index)` for a 1-d `index`, else `tensor.gather(dim, index)`;
    `inverse` is the inverse permutation in the same form."""
    return _Permute.apply(tensor, dim, index, inverse)
