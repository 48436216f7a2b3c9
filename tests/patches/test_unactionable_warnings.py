"""`patches.unactionable_warnings`: the one trainer warning, and nothing else, is filtered."""

import warnings

from allennlp_elmo_c.patches import unactionable_warnings


def test_the_unactionable_warning_and_nothing_else_is_filtered():
    def shown(message, category, module):
        with warnings.catch_warnings(record=True) as caught:
            warnings.resetwarnings()  # the patch's filters alone (not the test runner's), then all
            for unactionable in unactionable_warnings.UNACTIONABLE_WARNINGS:
                warnings.filterwarnings("ignore", **unactionable)
            warnings.simplefilter("always", append=True)
            warnings.warn_explicit(message, category, "x.py", 1, module=module)
        return len(caught)

    trainer = "allennlp.training.gradient_descent_trainer"
    autocast = "`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast`"
    assert shown(autocast, FutureWarning, trainer) == 0
    assert shown(autocast, FutureWarning, "somewhere.else") == 1
    assert shown("another deprecation", FutureWarning, trainer) == 1
    pkg = "pkg_resources is deprecated as an API. See https://setuptools.pypa.io"
    assert shown(pkg, UserWarning, "rouge.rouge") == 1  # ignored only inside the NarrativeQA import
