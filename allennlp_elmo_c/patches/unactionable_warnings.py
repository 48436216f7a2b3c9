"""
AllenNLP's trainer calls the deprecated `torch.cuda.amp.autocast(...)`, a FutureWarning from
`allennlp.training.gradient_descent_trainer` at every training start that no user can act on.
It is filtered where it arises, by exact message and module; nothing else is hidden. For every
model (nothing of AllenNLP's is replaced).
"""

import warnings

# `warnings.filterwarnings` arguments, each one warning of one module.
UNACTIONABLE_WARNINGS = (
    {
        "message": r"`torch\.cuda\.amp\.autocast\(args\.\.\.\)` is deprecated",
        "category": FutureWarning,
        "module": r"allennlp\.training\.gradient_descent_trainer",
    },
)


def apply() -> None:
    """Adds the filters (`warnings` keeps one copy of a filter added twice)."""
    for unactionable in UNACTIONABLE_WARNINGS:
        warnings.filterwarnings("ignore", **unactionable)
