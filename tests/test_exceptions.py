"""The public warnings are the classes the library issues, under one module."""

import warnings

from skevidence import exceptions
from skevidence._base import PreconditionWarning
from skevidence._meta import EvidenceTieWarning
from skevidence.inference.sgais import AnnealingWarning


def test_public_names_are_the_issued_classes():
    assert exceptions.EvidenceTieWarning is EvidenceTieWarning
    assert exceptions.AnnealingWarning is AnnealingWarning
    assert exceptions.PreconditionWarning is PreconditionWarning
    assert set(exceptions.__all__) == {"AnnealingWarning", "EvidenceTieWarning",
                                       "PreconditionWarning"}


def test_filtering_by_the_public_name_catches_the_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore")
        warnings.simplefilter("always", exceptions.AnnealingWarning)
        warnings.warn("many steps", AnnealingWarning)
        warnings.warn("other", UserWarning)
    assert [type(w.message) for w in caught] == [AnnealingWarning]
