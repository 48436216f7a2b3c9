"""
spaCy's `elmo_c` pipeline factory, registered through the `spacy_factories` entry point: spaCy
imports this module whenever it builds a pipeline, so it imports spaCy alone; the plugin
(`allennlp_elmo_c.integrations.spacy_pipe`) is imported when an `elmo_c` component is made.
"""

from typing import Optional

from spacy.language import Language

FACTORY = "elmo_c"


@Language.factory(FACTORY, default_config={"layer": None, "batch_size": 32, "device": None})
def make_elmo_c(
    nlp: Language,
    name: str,
    model: str,
    layer: Optional[int],
    batch_size: int,
    device: Optional[str],
):
    """The `elmo_c` component: `nlp.add_pipe("elmo_c", config={"model": DIR})`."""
    from allennlp_elmo_c.integrations.spacy_pipe import ElmoCComponent

    return ElmoCComponent(nlp, name, model, layer=layer, batch_size=batch_size, device=device)
