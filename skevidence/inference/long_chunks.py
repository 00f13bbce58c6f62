"""The warning about a chunk that needed unusually many annealing steps."""

import warnings

__all__ = ["AnnealingWarning", "long_chunk_message", "warn_if_long"]


class AnnealingWarning(UserWarning):
    """A chunk needed unusually many annealing steps.

    Issued by ``fit`` / ``partial_fit`` when conditioning on one chunk took
    more annealing steps than the ``annealing_steps_warning`` entry of
    ``engine_options`` (250 by default; ``None`` turns it off): the data lie
    far in the tails of the prior or of the posterior so far. The message
    is also in ``diagnostics_["warnings"]``; :ref:`settings` says what to do.

    Public name: :class:`skevidence.exceptions.AnnealingWarning`.
    """


def long_chunk_message(n_steps, n_before, size, threshold):
    """What :class:`AnnealingWarning` says about a chunk of ``n_steps`` steps.

    ``n_before`` observations were seen before the chunk of ``size``, and
    ``threshold`` is the ``annealing_steps_warning`` it exceeded.
    """
    return (
        f"adding {size} observations after {n_before} took {n_steps} annealing steps "
        f"(more than {threshold}): the data lie far in the tails of "
        "the prior (prior-data conflict) or of the posterior so far (a change in the "
        "stream, or moves that do not keep the particles at the posterior). Cost grows "
        "with the conflict and the estimate loses accuracy; put the data on the scale the "
        "prior assumes (e.g. standardise them) or widen the prior; if they are, reduce "
        "learning_rate or increase n_burnin.")


def warn_if_long(longest, config):
    """:class:`AnnealingWarning` if ``longest`` (steps, observations before, size) is long."""
    n_steps, n_before, size = longest
    if config.annealing_steps_warning is None or n_steps <= config.annealing_steps_warning:
        return
    warnings.warn(long_chunk_message(n_steps, n_before, size, config.annealing_steps_warning),
                  AnnealingWarning, stacklevel=3)
