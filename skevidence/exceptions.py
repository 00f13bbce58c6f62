"""Warnings issued by skevidence, in the manner of :mod:`sklearn.exceptions`.

The classes are defined next to the code that issues them and collected
here, so that they can be filtered or caught by one public name (e.g.
``warnings.simplefilter("error", EvidenceTieWarning)``). A run whose
evidence should not be trusted is reported by scikit-learn's
:class:`~sklearn.exceptions.ConvergenceWarning` (:ref:`trust`).
"""

from ._base import PreconditionWarning
from ._meta import EvidenceTieWarning
from .inference.sgais import AnnealingWarning

__all__ = ["AnnealingWarning", "EvidenceTieWarning", "PreconditionWarning"]
