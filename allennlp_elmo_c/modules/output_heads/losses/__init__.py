from allennlp_elmo_c.modules.output_heads.losses.continuous_loss import (
    ContinuousLoss,
    build_continuous_loss,
    continuous_loss_names,
)
from allennlp_elmo_c.modules.output_heads.losses.cosine import CosineLoss
from allennlp_elmo_c.modules.output_heads.losses.l2 import L2Loss
from allennlp_elmo_c.modules.output_heads.losses.vmf import VmfLoss
from allennlp_elmo_c.modules.output_heads.losses.in_batch_softmax import InBatchSoftmaxLoss
