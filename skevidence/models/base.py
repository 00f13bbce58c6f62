"""The Model contract: what the SGAIS engine needs to know about a model.

A model is a small torch object over an unconstrained parameter vector
``theta`` of size ``n_params``. Every method works on ``M`` particles at
once (``theta`` has shape ``[M, n_params]``) and on a batch of data, given
as a tuple of tensors whose first dimension indexes the observations
(``(X, y)`` for supervised models, ``(X,)`` for density models).

Only :meth:`Model.sample_prior`, :meth:`Model.log_prior` and
:meth:`Model.log_likelihood` must be written; the gradients fall back to
autograd and a model overrides them where a closed form is faster.
"""

import math

import torch

__all__ = ["GaussianPriorModel", "Model", "batch_size_of", "take"]


def batch_size_of(batch):
    """Number of observations in a batch (a tuple of tensors)."""
    return batch[0].shape[0]


def take(batch, index):
    """Rows ``index`` of every tensor of a batch."""
    return tuple(t[index] for t in batch)


class Model:
    """Base class of the probabilistic models used by the SGAIS engine.

    Subclasses set ``n_params`` and implement :meth:`sample_prior`,
    :meth:`log_prior` and :meth:`log_likelihood`. Gradients default to
    autograd through those methods.
    """

    n_params: int

    def sample_prior(self, n, generator, dtype=torch.float64, device="cpu"):
        """Draw ``n`` parameter vectors from the prior, shape ``[n, n_params]``."""
        raise NotImplementedError

    def log_prior(self, theta):
        """Log prior density of unconstrained ``theta [M, d]`` -> ``[M]``.

        Includes the log-Jacobian of every transform to the unconstrained
        space.
        """
        raise NotImplementedError

    def log_likelihood(self, theta, batch):
        """Per-observation log-likelihood, ``[M, B]``."""
        raise NotImplementedError

    def grad_log_prior(self, theta):
        """Gradient of :meth:`log_prior`, ``[M, d]``."""
        with torch.enable_grad():
            theta = theta.detach().requires_grad_(True)
            (grad,) = torch.autograd.grad(self.log_prior(theta).sum(), theta)
        return grad

    def grad_log_likelihood(self, theta, batch):
        """Gradient of the batch's summed log-likelihood, ``[M, d]``."""
        with torch.enable_grad():
            theta = theta.detach().requires_grad_(True)
            total = self.log_likelihood(theta, batch).sum()
            (grad,) = torch.autograd.grad(total, theta)
        return grad

    def log_likelihood_and_grad(self, theta, batch):
        """Summed log-likelihood of the batch, ``[M]``, and its gradient, ``[M, d]``.

        The engine's exact (Metropolis-adjusted) moves need both; models
        whose two computations share most of their work override this to
        do it once.
        """
        return self.log_likelihood(theta, batch).sum(1), self.grad_log_likelihood(theta, batch)

    def posterior_scale(self, theta, n_eff):
        """Approximate posterior standard deviation of every coordinate, ``[M, d]``.

        Used by the engine's ``precondition="model"`` as a per-particle
        diagonal preconditioner after ``n_eff`` observations. The default,
        ``1 / sqrt(n_eff)``, is that of a model with unit Fisher information;
        models override it with their own Fisher information.
        """
        return torch.full_like(theta, 1.0 / max(float(n_eff), 1.0) ** 0.5)

    def fisher_information(self, theta, batch):
        """Summed Fisher information of the batch at one ``theta [d]``, ``[d, d]``, or ``None``.

        Optional. With :meth:`prior_precision` it gives the precision of a
        Laplace approximation of the posterior, which the engine uses as its
        preconditioner when there are too few particles to estimate a
        covariance in ``d`` dimensions (``SGAISConfig.curvature_ratio``).
        ``None``, the default, means unknown: the engine then uses the
        particles' covariance.
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

    def prior_precision(self, theta):
        """Negative Hessian of :meth:`log_prior` at one ``theta [d]``, ``[d, d]``, or ``None``."""
        return None

    def exact_log_evidence(self, batch):
        """Closed-form log evidence of ``batch``, where one exists."""
        raise NotImplementedError(
            f"{type(self).__name__} has no closed-form evidence"
        )


class GaussianPriorModel(Model):
    """A model whose ``n_params`` parameters are i.i.d. ``N(0, prior_std^2)`` a priori.

    Subclasses set ``n_params`` and ``prior_std`` and implement the likelihood.
    """

    prior_std: float

    def sample_prior(self, n, generator, dtype=torch.float64, device="cpu"):
        eps = torch.randn(n, self.n_params, generator=generator, dtype=dtype, device=device)
        return self.prior_std * eps

    def log_prior(self, theta):
        var = self.prior_std**2
        return -0.5 * (theta.square().sum(1) / var
                       + self.n_params * (math.log(2.0 * math.pi) + math.log(var)))

    def grad_log_prior(self, theta):
        return -theta / self.prior_std**2

    def prior_precision(self, theta):
        eye = torch.eye(self.n_params, dtype=theta.dtype, device=theta.device)
        return eye / self.prior_std**2
