"""`permute` computes `index_select` / `gather` and sends the gradient back by the inverse
permutation (gradcheck; the gather form is also tested through `reverse_padded`, in
tests/modules/seq2seq_encoders/test_elmo_lstm.py)."""
import torch

from allennlp_elmo_c.nn.permutation import permute


def test_row_permutation_gradient_goes_back_through_the_inverse():
    tensor = torch.randn(6, 2, 3, dtype=torch.float64, requires_grad=True)
    order = torch.tensor([2, 0, 5, 4, 1, 3])
    inverse = torch.argsort(order)
    assert torch.equal(permute(tensor, 0, order, inverse), tensor[order])
    assert torch.autograd.gradcheck(lambda t: permute(t, 0, order, inverse), (tensor,))
    grad = torch.randn(6, 2, 3, dtype=torch.float64)
    (ours,) = torch.autograd.grad(permute(tensor, 0, order, inverse), tensor, grad)
    assert torch.equal(ours[order], grad)
