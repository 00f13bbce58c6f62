"""Reading a fitted posterior: predictions over row blocks and the ArviZ export."""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted, validate_data

from ._config import torch_threads

__all__ = ["NaturalParameters", "PosteriorMixin"]

# Prediction works on blocks of rows whose per-particle intermediate
# ([n_particles, rows, width] float64) has at most this many elements
# (2**22: 32 MiB), so memory stays bounded whatever the number of rows.
_PREDICT_BLOCK_ELEMENTS = 2**22


@dataclass(frozen=True)
class NaturalParameters:
    """Named parameter arrays of some particles, with their ArviZ ``dims`` and ``coords``."""

    params: dict  # name -> [M, ...]
    dims: dict  # name -> the names of its dimensions after the particles'
    coords: dict  # dimension name -> its labels


class PosteriorMixin:
    """Predictions and ArviZ export over the weighted particles of a fitted estimator."""

    def _rows_per_block(self, width=1):
        """Rows per block, keeping [n_particles, rows, width] under _PREDICT_BLOCK_ELEMENTS."""
        return max(1, _PREDICT_BLOCK_ELEMENTS // (self.n_particles * max(width, 1)))

    def _predict_in_blocks(self, X, compute, width=1):
        """``compute(block)`` on row blocks of validated ``X``, concatenated."""
        X = self._check_fitted_input(X)
        rows = self._rows_per_block(width)
        with torch_threads(), torch.no_grad():
            parts = [compute(self._as_tensor(X[start : start + rows], torch.float64))
                     for start in range(0, max(X.shape[0], 1), rows)]
        if isinstance(parts[0], tuple):
            return tuple(torch.cat(column).cpu().numpy() for column in zip(*parts))
        return torch.cat(parts).cpu().numpy()

    def _check_fitted_input(self, X):
        """Validate prediction inputs and return them as a tensor batch."""
        check_is_fitted(self, "log_evidence_")
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _weights_tensor(self):
        return torch.as_tensor(self.particle_weights_, dtype=torch.float64, device=self.device)

    def _particles_tensor(self):
        """The particles in the engine's parameterisation (those of the runs pooled,
        with ``n_init > 1``)."""
        if "_runs" in vars(self):
            return self._pooled_theta
        return self._state.theta.to(torch.float64)

    def to_inference_data(self, X=None, y=None, *, n_draws=None, resample=True,
                          random_state=None):
        """The fitted posterior and evidence as ArviZ data, for ``az.summary``, ``az.loo``...

        Returns ArviZ's container for the ArviZ installed (``InferenceData``
        under ArviZ 0.x, an ``xarray.DataTree`` under 1.x), laid out as
        ArviZ's converters lay out MCMC output, with these groups:

        * ``posterior``: draws of the model's natural parameters (with
          ``resample=True`` in four chains: an arbitrary grouping of
          exchangeable draws, so ``r_hat`` is near 1 by construction and
          says nothing of convergence, which ``diagnostics_`` reports), with
          named dimensions: ``coef`` (``feature``; with
          ``class`` for the classifier), ``intercept`` and, for the
          regression with unknown noise, ``noise_variance``; for
          :class:`EvidenceGMM`, ``weights``, ``means`` and ``variances``
          (``component``, not identified: per-component summaries mix
          components where particles disagree on their order); for
          :class:`EvidenceModel`, ``theta`` (``param``) or the arrays of a
          dict returned by the model's ``unpack(theta)``. Features are
          labelled by ``feature_names_in_``, else ``x0, x1, ...``.
        * ``prior``: as many draws from the prior the estimator used
          (``prior_``, data-scaled values resolved), of the same
          variables, dimensions and coordinates as ``posterior``.
        * ``sample_stats``: ``log_marginal_likelihood`` and
          ``log_marginal_likelihood_std`` per chunk (dimension ``chunk``,
          coordinate ``n_seen``), as PyMC's ``sample_smc`` records one per
          stage; the final ``log_evidence`` and ``log_evidence_std``;
          ``n_annealing_steps`` and ``ess`` per chunk; and with
          ``resample=False`` the particles' ``weight``.
        * ``log_likelihood`` (only when ``X`` is given, with ``y`` for a
          supervised model): ``log p(observation i | draw)``, dimensions
          ``chain``, ``draw``, ``observation``, named ``y`` (``X`` for the
          mixture and for models fitted without targets), so that
          ``az.loo`` and ``az.compare`` work.
        * ``observed_data`` (``y``, or ``X`` without targets) and
          ``constant_data`` (``X`` with targets), when ``X`` is given.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), default=None
            Observations (inputs) at which to evaluate the pointwise log
            likelihood, usually the training data. ``None`` leaves out
            ``log_likelihood`` and the data groups.
        y : array-like of shape (n_samples,), default=None
            Their targets (labels for a classifier); required with ``X``
            when the estimator was fitted with targets, ignored by
            :class:`EvidenceGMM`.
        n_draws : int or None, default=None
            Number of draws, a multiple of 4; ``None`` gives at least one
            per particle. Only with ``resample=True``. ``az.loo`` needs a few
            thousand distinct draws for its Pareto-k check to pass on most
            rows; the draws are copies of the particles, so fit with
            ``n_particles`` of that order when leave-one-out matters. For a
            pipeline or a search, :func:`skevidence.to_inference_data`.
        resample : bool, default=True
            ``True``: equally weighted draws, by systematic resampling of
            the particles by their weights (then shuffled, since ArviZ reads
            the draws as a chain), which is what ArviZ's functions
            (``summary``, ``loo``, plots) assume. ``False``: the particles
            themselves, with their importance weights in
            ``sample_stats["weight"]``; ArviZ's functions ignore the
            weights, so use them for weighted summaries of your own.
        random_state : int, RandomState instance or None, default=None
            Seeds the resampling and the prior's draws; the same value gives
            the same draws.

        Returns
        -------
        data : arviz.InferenceData or xarray.DataTree
            The groups above.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            When the estimator is not fitted.
        ImportError
            When ArviZ is not installed (``pip install arviz``, or
            ``pip install 'skevidence[arviz]'``).

        Examples
        --------
        >>> import numpy as np
        >>> from skevidence import EvidenceLinearRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(200, 2))
        >>> y = X @ [1.0, -0.5] + rng.normal(size=200)
        >>> reg = EvidenceLinearRegression(n_particles=64, random_state=0).fit(X, y)
        >>> idata = reg.to_inference_data(X, y, random_state=0)
        >>> idata.posterior["coef"].dims, idata.posterior["coef"].shape
        (('chain', 'draw', 'feature'), (4, 16, 2))
        >>> idata.posterior["coef"].coords["feature"].values.tolist()
        ['x0', 'x1']
        >>> idata.log_likelihood["y"].shape
        (4, 16, 200)
        >>> bool(idata.sample_stats["log_evidence"][0] == reg.log_evidence_)
        True
        """
        from ._arviz import to_inference_data

        return to_inference_data(self, X, y, n_draws=n_draws, resample=resample,
                                 random_state=random_state)

    def _takes_y(self):
        """Whether the model's observations are ``(X, y)`` (else ``X`` alone)."""
        return True

    def _observed_targets(self, y):
        """``y`` as it is shown in ``observed_data`` (validated, labels decoded)."""
        return y

    def _natural_parameters(self, theta):
        """The :class:`NaturalParameters` of particles ``theta [M, d]`` for ``to_inference_data``."""
        unpack = getattr(self._model, "unpack", None)
        if callable(unpack):
            try:
                named = unpack(theta)
            except TypeError:  # an unpack of another signature: fall back on theta
                named = None
            if isinstance(named, Mapping):
                return NaturalParameters(dict(named), {}, {})
        return NaturalParameters({"theta": theta}, {"theta": ["param"]},
                                 {"param": np.arange(theta.shape[1])})
