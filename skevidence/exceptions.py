"""Warnings issued by skevidence, in the manner of :mod:`sklearn.exceptions`.

The classes are defined next to the code that issues them (the engine,
``skevidence.inference``, does not import the estimators) and collected
here, so that they can be filtered or caught by one public name::

    import warnings
    from skevidence.exceptions import EvidenceTieWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", EvidenceTieWarning)
        ...

A run whose evidence should not be trusted (diverged particles, a
collapsed ESS, particles that lag the posterior) is reported by
scikit-learn's :class:`~sklearn.exceptions.ConvergenceWarning`, as for
other estimators.
"""

from ._meta import EvidenceTieWarning
from .inference.sgais import AnnealingWarning

__all__ = ["AnnealingWarning", "EvidenceTieWarning"]
