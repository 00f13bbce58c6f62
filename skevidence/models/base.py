"""The Model contract: what the SGAIS engine needs to know about a model."""

import math

import torch

__all__ = ["GaussianPriorModel", "Model", "has_fisher_information", "has_mode_search",
           "has_relabellings", "LOG_2PI"]

# log(2 pi), the Gaussian densities' normaliser.
LOG_2PI = math.log(2.0 * math.pi)


def has_fisher_information(model):
    """Whether ``model`` overrides :meth:`Model.fisher_information` (optional in the contract)."""
    return type(model).fisher_information is not Model.fisher_information


def has_mode_search(model):
    """Whether ``model`` overrides :meth:`Model.mode_candidates` (a search for missed modes)."""
    return type(model).mode_candidates is not Model.mode_candidates


def has_relabellings(model):
    """Whether ``model`` overrides :meth:`Model.relabelling_maps`: its posterior has
    relabelled copies of each mode (whatever its number of components), so that a
    mean over particles need not lie near any of them."""
    return type(model).relabelling_maps is not Model.relabelling_maps


def _autograd_gradient(function, theta):
    """Gradient of ``function(theta).sum()`` in ``theta [M, d]`` by autograd, ``[M, d]``:
    each particle's own, as its terms do not depend on the other particles."""
    with torch.enable_grad():
        theta = theta.detach().requires_grad_(True)
        (grad,) = torch.autograd.grad(function(theta).sum(), theta)
    return grad


def _weighted_sum_or_none(terms, values):
    """``sum_i w_i values[i]`` over ``terms = [(w_i, batch_i)]``, or None where any value is."""
    if any(value is None for value in values):
        return None
    return sum(weight * value for (weight, _), value in zip(terms, values))


class Model:
    """Base class of the models whose evidence the SGAIS engine computes (public).

    A model is a prior and a likelihood in torch over an unconstrained
    parameter vector ``theta`` of size ``n_params``. Every method works on
    ``M`` particles at once (``theta`` of shape ``[M, n_params]``) and on a
    batch of data, a tuple of tensors whose first dimension indexes the
    observations: ``(X,)`` for density models, ``(X, y)`` for conditional
    ones. Subclass it, set ``n_params`` and write three methods:

    - :meth:`sample_prior` -- ``n`` draws from the prior, ``[n, n_params]``;
    - :meth:`log_prior` -- the log prior density of ``theta``, ``[M]``,
      including the log-Jacobian of any transform to the unconstrained
      space (e.g. ``log sigma^2`` for a variance);
    - :meth:`log_likelihood` -- one log-likelihood term per observation,
      ``[M, B]`` for a batch of ``B``: the observations must be
      conditionally independent given ``theta``, since the engine adds
      them in chunks and draws mini-batches of them.

    Gradients come from autograd through these methods; a model may
    override :meth:`grad_log_prior`, :meth:`grad_log_likelihood` and
    :meth:`log_likelihood_sum` with a closed form where that is faster
    (and :meth:`log_joint_and_grad`, where prior and likelihood combine;
    :meth:`prepare_batch` and :meth:`prepare_move_batch` prepare the data
    that the exact moves evaluate at every step);
    :meth:`fisher_information` and
    :meth:`prior_precision` give a preconditioner for many parameters
    (:meth:`weighted_grad_log_likelihood` and
    :meth:`weighted_fisher_information` then let the moves evaluate two
    mini-batches in one call), and
    :meth:`summarize` lets the moves stay exact on long streams. Compute
    every quantity for all particles in one batched operation (no Python
    loop over particles or observations) and in log space where
    probabilities could underflow.

    Pass a model to :func:`skevidence.log_evidence` or
    :class:`skevidence.EvidenceModel`; see :doc:`/user_guide/custom_models`.

    Attributes
    ----------
    n_params : int
        Size ``d`` of the unconstrained parameter vector.
    unimodal : bool
        Whether the posterior has a single mode whatever the data (a
        log-concave likelihood and prior, or a conjugate model); ``False``
        unless a subclass sets it. Where it holds, or the model has
        :meth:`relabelling_maps`, the estimators cross-check the evidence
        by importance sampling at the mode (``diagnostics_``) and fold that
        estimate into it; on a posterior with several modes that estimate
        would miss the other modes' mass.

    See Also
    --------
    skevidence.log_evidence : the log evidence of a model on data.
    skevidence.EvidenceModel : the same as a streaming estimator.

    Examples
    --------
    Bayesian linear regression through the origin, ``y ~ N(X w, 1)`` with
    ``w ~ N(0, I)``:

    >>> import math, numpy as np, torch
    >>> import skevidence
    >>> from skevidence.models import Model
    >>> class Linear(Model):
    ...     def __init__(self, n_features):
    ...         self.n_params = n_features
    ...     def sample_prior(self, n, generator, dtype=torch.float64, device="cpu"):
    ...         return torch.randn(n, self.n_params, generator=generator, dtype=dtype,
    ...                            device=device)
    ...     def log_prior(self, theta):
    ...         return -0.5 * (theta.square().sum(1) + self.n_params * math.log(2 * math.pi))
    ...     def log_likelihood(self, theta, batch):
    ...         X, y = batch
    ...         return -0.5 * ((y - theta @ X.T).square() + math.log(2 * math.pi))
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 2))
    >>> y = X @ [1.0, -1.0] + rng.normal(size=500)
    >>> result = skevidence.log_evidence(Linear(2), X, y, n_particles=64, random_state=0)
    >>> result.particles.shape
    (64, 2)
    """

    n_params: int
    unimodal = False

    def sample_prior(self, n, generator, dtype=torch.float64, device="cpu"):
        """Draw ``n`` parameter vectors from the prior.

        Parameters
        ----------
        n : int
            Number of draws.
        generator : torch.Generator
            The engine's random generator: draw only from it (e.g.
            ``torch.randn(..., generator=generator)``), so that the same
            ``random_state`` gives the same numbers.
        dtype : torch.dtype, default=torch.float64
            Floating-point type of the draws.
        device : str or torch.device, default="cpu"
            Device of the draws.

        Returns
        -------
        theta : torch.Tensor of shape (n, n_params)
            Unconstrained parameter vectors.
        """
        raise NotImplementedError

    def log_prior(self, theta):
        """Log prior density of ``theta``, in the unconstrained space.

        Parameters
        ----------
        theta : torch.Tensor of shape (M, n_params)
            Particles.

        Returns
        -------
        log_prior : torch.Tensor of shape (M,)
            Includes the log-Jacobian of every transform to the
            unconstrained space, so that it is the density of ``theta``
            that :meth:`sample_prior` draws.
        """
        raise NotImplementedError

    def log_likelihood(self, theta, batch):
        """Log-likelihood of every observation of ``batch`` at every particle.

        Parameters
        ----------
        theta : torch.Tensor of shape (M, n_params)
            Particles.
        batch : tuple of torch.Tensor
            ``(X,)`` or ``(X, y)``, the observations along the first
            dimension, in the particles' dtype and device.

        Returns
        -------
        log_likelihood : torch.Tensor of shape (M, B)
            ``log p(observation b | theta_m)``; ``-inf`` is allowed (the
            particle then gets zero weight), NaN is not.
        """
        raise NotImplementedError

    def log_likelihood_sum(self, theta, batch):
        """Summed log-likelihood of the batch per particle, ``[M]`` (the importance weights').

        The default sums :meth:`log_likelihood`; a model may override it
        where the sum costs less than its terms (no per-observation
        values to form).
        """
        return self.log_likelihood(theta, batch).sum(1)

    def grad_log_prior(self, theta):
        """Gradient of :meth:`log_prior`, ``[M, d]``."""
        return _autograd_gradient(self.log_prior, theta)

    def grad_log_likelihood(self, theta, batch):
        """Gradient of the batch's summed log-likelihood, ``[M, d]``."""
        return _autograd_gradient(lambda point: self.log_likelihood_sum(point, batch), theta)

    def weighted_grad_log_likelihood(self, theta, terms):
        """``sum_i w_i grad log p(batch_i | theta)`` over ``terms = [(w_i, batch_i)]``, ``[M, d]``.

        The engine's control variates estimate the past data's and the
        chunk's gradient sums from a mini-batch of each, every step; a
        model whose cost per call dwarfs its cost per row may override this
        to evaluate all the terms' rows in one call, each row weighted. The
        default calls :meth:`grad_log_likelihood` once per term.
        """
        return sum(weight * self.grad_log_likelihood(theta, batch) for weight, batch in terms)

    def weighted_fisher_information(self, theta, terms):
        """``sum_i w_i`` :meth:`fisher_information` ``(theta, batch_i)``, ``[d, d]``, or ``None``.

        What :meth:`weighted_grad_log_likelihood` is to the gradient; the
        default calls :meth:`fisher_information` once per term.
        """
        return _weighted_sum_or_none(terms, [self.fisher_information(theta, batch)
                                             for _, batch in terms])

    def log_likelihood_and_grad(self, theta, batch):
        """Summed log-likelihood of the batch, ``[M]``, and its gradient, ``[M, d]``.

        The engine's exact (Metropolis-adjusted) moves need both; models
        whose two computations share most of their work override this to
        do it once.
        """
        return self.log_likelihood_sum(theta, batch), self.grad_log_likelihood(theta, batch)

    def log_joint_and_grad(self, theta, batch, weight=1.0):
        """``log_prior + weight * log_likelihood`` of the batch, ``[M]``, and its gradient.

        What each step of the engine's exact moves evaluates. The default
        adds :meth:`log_prior` to :meth:`log_likelihood_and_grad`; a model
        whose prior and likelihood combine into fewer operations (a
        conjugate prior with prepared statistics) may override it.
        """
        log_lik, g_lik = self.log_likelihood_and_grad(theta, batch)
        return (self.log_prior(theta).add(log_lik, alpha=weight),
                self.grad_log_prior(theta).add(g_lik, alpha=weight))

    def prepare_batch(self, batch):
        """``batch`` ready for many :meth:`log_likelihood_and_grad` calls at different ``theta``.

        The engine's exact warm-up evaluates the same data at every step of
        a move. A model may return a ``PreparedBatch`` with the
        statistics of the data its likelihood needs (a Gram matrix, label
        counts) and use them in :meth:`log_likelihood_and_grad`; the
        default returns ``batch`` unchanged.
        """
        return batch

    def prepare_move_batch(self, batch):
        """:meth:`prepare_batch` for the engine's Metropolis-adjusted moves alone.

        Their accept step corrects any error of the gradient, and an error
        of the log density far below a nat changes nothing, so a model may
        prepare a faster, less exact evaluation here than for the climbs
        and sums whose numbers are kept. The default is :meth:`prepare_batch`.
        """
        return self.prepare_batch(batch)

    def posterior_scale(self, theta, n_eff):
        """Approximate posterior standard deviation of every coordinate, ``[M, d]``.

        The engine's ``precondition="model"`` moves with a diagonal
        preconditioner from it after ``n_eff`` observations: each
        particle's own in the stochastic-gradient moves, shared by the
        particles (:meth:`shared_posterior_scale`) in the adjusted ones.
        The default, ``1 / sqrt(n_eff)``, is that of a model with unit
        Fisher information; models override it with their own.
        """
        return torch.full_like(theta, 1.0 / max(float(n_eff), 1.0) ** 0.5)

    def shared_posterior_scale(self, theta, live, n_eff):
        """:meth:`posterior_scale` shared by the particles, ``[M, d]``: the adjusted moves' scale.

        ``live [M]`` marks the particles that carry weight (a diverged one
        may hold anything). A move whose metric follows the position of
        the particle it moves no longer leaves the posterior invariant, so
        the default gives every particle the geometric mean of the live
        particles' scales (unweighted: a heavy particle would otherwise set
        its own metric). A model whose posterior has relabelled copies of
        each mode (a mixture) overrides it to share the scale up to the
        relabelling.
        """
        log_scale = self.posterior_scale(theta[live], n_eff).log()
        return log_scale.mean(0).exp().expand_as(theta)

    def fisher_information(self, theta, batch):
        """Summed Fisher information of the batch at one ``theta [d]``, ``[d, d]``, or ``None``.

        Optional. With :meth:`prior_precision` it gives the precision of a
        Laplace approximation of the posterior, which the engine uses as its
        preconditioner when there are too few particles to estimate a
        covariance in ``d`` dimensions (``SGAISConfig.curvature_ratio``),
        and it makes the control variate of the mini-batch gradients
        second order. The observed information (minus the Hessian of the
        batch's log-likelihood) serves the control variate best: its
        linear term then follows each row's change of gradient.
        ``None``, the default, means unknown: the engine then uses the
        particles' covariance and a first-order control variate.
        """
        return None

    def expected_fisher_information(self, theta, weights, batch):
        """Weighted mean of the batch's Fisher information over particles ``theta [M, d]``, ``[d, d]``.

        ``weights [M]`` are normalised. Optional, like
        :meth:`fisher_information`; the default evaluates that at the
        particles' weighted mean. Where the curvature changes across the
        cloud (a nearly separable classifier) the mean's curvature is too
        small and steps scaled by it diverge; models that can average
        cheaply override this.
        """
        return self.fisher_information(weights @ theta, batch)

    def summarize(self, batch):
        """Additive statistics of ``batch`` that determine its likelihood, or ``None``.

        Optional. Where a model has them (linear regression: the Gram
        matrix of the design and the targets), the engine keeps their sum
        over the data seen, so that past its warm-up it still moves the
        particles with Metropolis-adjusted steps on the exact posterior, at
        a cost that does not grow with the data, in place of
        stochastic-gradient moves. The log-likelihood must be linear in
        them (an exponential family's sufficient statistics are): a move
        at temperature ``lam`` takes the data seen plus ``lam`` times the
        chunk's statistics as one summary. ``None``, the default, means none.
        """
        return None

    def prepare_summary(self, summary):
        """What :meth:`log_likelihood_and_grad` takes for the data a :meth:`summarize` sum stands for."""
        raise NotImplementedError(f"{type(self).__name__} has no summary statistics")

    def prior_precision(self, theta):
        """Negative Hessian of :meth:`log_prior` at one ``theta [d]``, ``[d, d]``, or ``None``."""
        return None

    def relabelling_maps(self, dtype=torch.float64, device="cpu"):
        """``[P, d, d]``: linear maps ``theta @ maps[p]`` that leave the posterior as it is, or None.

        Optional. A model whose parameters can be relabelled without
        changing the likelihood or the prior (a mixture's components) has as
        many copies of each posterior mode; with the maps (the identity
        among them) the importance-sampling estimate at one mode covers
        them all, where the posterior has one mode up to them (checked on
        the particles). ``None``, the default, means none.
        """
        return None

    def spare_weight(self, theta, weights, store):
        """The particles' weight on parameters that no observation pins down, or None.

        Optional. Where a part of the model can explain none of the data (a
        mixture's component that no observation belongs to), its posterior
        is the prior's, and the posterior sums over many arrangements of such
        parts whose masses the particles weigh by their numbers: the
        evidence's error bar then understates its spread over sampler seeds
        (``_trust.py`` warns). ``theta [M, d]`` with normalised ``weights
        [M]``, ``store`` the stored observations. ``None``, the default,
        means the model has no such parts.
        """
        return None

    def mode_candidates(self, theta, rows, generator):
        """``[C, d]``: points near posterior modes that the particles may have missed, or None.

        Optional. For a model whose posterior can have modes far apart (a
        mixture's configurations), a few points near modes found from
        ``theta [d]`` (the heaviest particle), the stored observations
        ``rows`` and the prior, by changes the particles' local moves
        cannot make. The caller weighs the best against the particles
        (``inference/mode_search.py``). ``None``, the default, means no search.
        """
        return None

    def exact_log_evidence(self, batch):
        """Closed-form log evidence of ``batch``, where one exists."""
        raise NotImplementedError(f"{type(self).__name__} has no closed-form evidence")


class GaussianPriorModel(Model):
    """A model whose ``n_params`` parameters are independent Gaussians a priori.

    ``theta_i ~ N(prior_mean_i, prior_std_i^2)``. Subclasses set ``n_params``
    and ``prior_std`` (a float: i.i.d. ``N(0, prior_std^2)``, the default),
    or ``prior_std`` and ``prior_mean`` as arrays of shape ``(n_params,)``,
    and implement the likelihood.
    """

    prior_std: float
    prior_mean = None

    def _isotropic(self):
        return self.prior_mean is None and not hasattr(self.prior_std, "shape")

    def _prior_tensors(self, like):
        """``(mean, std)`` as ``[n_params]`` tensors in ``like``'s dtype and device."""
        cache = self.__dict__.setdefault("_prior_cache", {})
        key = (like.dtype, like.device)
        if key not in cache:
            mean = 0.0 if self.prior_mean is None else self.prior_mean
            shape = (self.n_params,)
            cache[key] = tuple(torch.as_tensor(value, dtype=like.dtype, device=like.device)
                               .expand(shape).clone() for value in (mean, self.prior_std))
        return cache[key]

    def sample_prior(self, n, generator, dtype=torch.float64, device="cpu"):
        eps = torch.randn(n, self.n_params, generator=generator, dtype=dtype, device=device)
        if self._isotropic():
            return self.prior_std * eps
        mean, std = self._prior_tensors(eps)
        return mean + std * eps

    def log_prior(self, theta):
        if self._isotropic():
            var = self.prior_std**2
            return -0.5 * (theta.square().sum(1) / var
                           + self.n_params * (math.log(2.0 * math.pi) + math.log(var)))
        mean, std = self._prior_tensors(theta)
        return -0.5 * (((theta - mean) / std).square().sum(1)
                       + self.n_params * math.log(2.0 * math.pi)
                       + 2.0 * torch.log(std).sum())

    def grad_log_prior(self, theta):
        if self._isotropic():
            return -theta / self.prior_std**2
        mean, std = self._prior_tensors(theta)
        return -(theta - mean) / std.square()

    def prior_precision(self, theta):
        if self._isotropic():
            eye = torch.eye(self.n_params, dtype=theta.dtype, device=theta.device)
            return eye / self.prior_std**2
        return torch.diag(self._prior_tensors(theta)[1].square().reciprocal())
