"""The contract of an evidence engine: two functions and what it can do.

Every method behind the estimators' ``method=`` is a module of this
package that ends with ``ENGINE = Engine(...)``; ``skevidence.inference.ENGINES``
collects them by method name. A caller (the estimators) drives any of them
the same way, and asks the capability attributes, never the name, where
the methods differ::

    state = engine.init(model, config, generator, dtype=dtype, device=device)
    state = engine.update(model, state, config, batch, callback=callback)

A state is a value (:func:`.records.successor`; :ref:`algorithm`).

The functions
-------------
init(model, config, generator, dtype=torch.float64, device="cpu") -> SGAISState
    A new state: particles drawn from ``model``'s prior with equal weights,
    no data seen. ``config`` is an :class:`~.config.SGAISConfig`,
    ``generator`` the ``torch.Generator`` every random draw of the run
    uses (the state holds it; each update continues its stream on a clone).
update(model, state, config, batch, move=None, callback=None) -> SGAISState
    A new state: ``state`` conditioned on ``batch`` (a tuple of tensors
    whose first dimension is the observations); ``state`` itself, its
    arrays and its generator are not changed. ``move(model, state,
    config, chunk, lam)`` replaces the engine's particle move
    (default :func:`.sgais.sghmc_move`, or :func:`.sgais.exact_move` for
    the exact engines); the nested-sampling runs ignore it.
    ``callback(state, lam, n_pending)`` runs after every annealing step
    (``lam`` reached, ``n_pending`` the observations of the chunk not yet
    in ``state.n_seen``) and after each chunk (``lam = 1``, ``n_pending = 0``);
    it sees the states the update builds.

The capabilities
----------------
keeps_every_observation : bool
    The moves or the runs use every observation seen, so the engine cannot
    work from a bounded reservoir (``config.reservoir_size`` must be None).
refits_from_prior : bool
    Each :func:`update` reruns from the prior on all the data seen so far
    (not online: the cost of a call grows with the data seen).
trace_ess_is_predictive : bool
    The trace's ``"ess"`` of a chunk is that of the chunk's predictive
    estimate (not the ESS after annealing), so a small one means that the
    chunk's estimate rested on few particles.
anneals_online : bool
    The chunks after the first anneal from the posterior so far, so that
    many annealing steps in one of them signal a problem (the long-chunk
    warning, ``config.annealing_steps_warning``, applies).
"""

from dataclasses import dataclass
from typing import Callable

__all__ = ["Engine"]


@dataclass(frozen=True)
class Engine:
    """One evidence engine: its method name, its two functions, its capabilities.

    See the module docstring for what each function takes and returns and
    what each capability means.
    """

    name: str
    init: Callable
    update: Callable
    keeps_every_observation: bool = False
    refits_from_prior: bool = False
    trace_ess_is_predictive: bool = False
    anneals_online: bool = False
