import torch

from allennlp.common.checks import ConfigurationError

from allennlp_elmo_c.modules.output_heads.losses.continuous_loss import ContinuousLoss
from allennlp_elmo_c.nn.vmf import vmf_loss


@ContinuousLoss.register("vmf")
class VmfLoss(ContinuousLoss):
    """
    The von Mises-Fisher negative log-likelihood of Kumar & Tsvetkov (2019) (`vmf_loss`).

    Registered as a `ContinuousLoss` with name "vmf".

    # Parameters

    lambda_1 : `float`, optional (default = `0.0`)
        Regulariser 1: adds `lambda_1 * ||prediction||` (`>= 0`; the head's `vmf_lambda_1`).
    lambda_2 : `float`, optional (default = `1.0`)
        Regulariser 2: scales the `prediction . target` term (in `(0, 1]`, use < 1; the head's
        `vmf_lambda_2`).
    """

    head_keys = {"vmf_lambda_1": "lambda_1", "vmf_lambda_2": "lambda_2"}

    def __init__(self, lambda_1: float = 0.0, lambda_2: float = 1.0) -> None:
        if lambda_1 < 0 or not 0 < lambda_2 <= 1:
            raise ConfigurationError(
                "continuous head: need vmf_lambda_1 >= 0 and 0 < vmf_lambda_2 <= 1, got "
                f"{lambda_1} and {lambda_2}; set them in that range (defaults 0.0 and 1.0)"
            )
        self.lambda_1 = lambda_1
        self.lambda_2 = lambda_2

    def __call__(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return vmf_loss(predictions, targets, lambda_1=self.lambda_1, lambda_2=self.lambda_2)
