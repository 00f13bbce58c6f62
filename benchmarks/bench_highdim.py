"""EvidenceLogisticRegression with hundreds of parameters: which preconditioner.

Data sets (all in a ``StandardScaler`` pipeline, ``train_test_split(test_size=0.3,
random_state=split)``; ``--test-size 0.25`` gives the split of the earlier
measurements):

* ``paper``: ``make_logistic_regression(1333, random_state=1)`` (10 features,
  4 classes, d = 44), the paper's model;
* ``synth100`` / ``synth200``: the same generator with 24 / 49 features
  (d = 100 / 200), 4 d observations (3 d for training);
* ``digits3``: scikit-learn's digits, classes 0, 1, 2 (64 features, d = 195);
* ``digits``: all of digits (10 classes, d = 650).

Preconditioners (``SGAISConfig``): ``covariance`` (the particles' weighted
covariance, ``curvature_ratio=0`` so that it is never replaced),
``diagonal`` (its diagonal) and ``low-rank`` (the covariance's top ``M / 4``
principal components plus the diagonal of the rest; both patched in here,
not engine settings; the ``ledoit-wolf`` column, the covariance shrunk
toward its diagonal with the Ledoit-Wolf weight, was an engine setting until
it was removed for the bias it showed), ``curvature`` (the model's Laplace precision: prior
precision plus the Fisher information of the tempered data averaged over
the particles, ``Model.expected_fisher_information``), ``curv-mean`` (the
same at the particles' weighted mean, the engine before this benchmark's
last round) and ``default`` (the rule: curvature when ``n_particles < 2 d``;
with it the unadjusted moves take at most the warm-up's adapted step).

Columns: data set, d, split, particles, preconditioner, test accuracy (and
scikit-learn's ``LogisticRegression`` on the same split), the particles'
weighted mean training log-likelihood and that of the posterior mode (the
optimum; a posterior sample sits about ``d_eff / 2`` below it), the log
evidence, a reference with its standard error and ESS, the difference, the
fit's CPU and wall time, and ``W`` when the fit raised a
``ConvergenceWarning``. The reference is importance sampling from a
multivariate t (10 degrees of freedom) at the Laplace approximation where
its ESS is usable (paper, synth100); on digits, nearly separable, it is not
(ESS 3e-5 of 4e4 draws on digits3), and the reference is annealed
importance sampling (``annealed_reference``: 400 geometric steps from a t
at the moments of exact GHMC draws to the posterior, 5 exact GHMC steps
each, 256 chains; digits3 split 0: -39.15 +- 0.03, ESS 78%; with 100 steps
-38.97 +- 0.08, ESS 19%). Wall time on a machine shared with other jobs is
inflated; the CPU time of the (single-threaded) process is the better
estimate of the wall time on a quiet machine.

Measured (one sampler seed; CPU seconds of one core on a 2-core machine
shared with 20-30 other processes, wall times 5-20x longer), log Z minus
the reference. Which preconditioner won, by dimension (M particles):

======== ===== ====== ========== ======== ======== =========== ========= ==========
data      d     M     covariance diagonal low-rank ledoit-wolf curv-mean curvature
======== ===== ====== ========== ======== ======== =========== ========= ==========
paper     44    32    -211.3     +0.35    +0.64    -0.17       -0.37     -0.26
paper     44    128   +0.40      .        +1.24    .           .         -0.34
synth100  100   32    -219.8     +0.55    +0.21    +0.51       +0.25     +0.02
synth100  100   128   -0.29      -0.08    .        +0.03       +0.63     .
digits3   195   128   -2.96      +0.34    +0.35    +0.28       +0.06     +0.23
digits    650   128   acc 0.785  diverged .        .           acc 0.909 acc 0.957
======== ===== ====== ========== ======== ======== =========== ========= ==========

(paper and synth100 at ``--test-size 0.25``: references -646.26 and
-190.57 +- 0.15; digits3 at 0.3: AIS -39.15 +- 0.03; the digits row gives
the test accuracy: covariance, diagonal and curv-mean at 0.25, where
``LogisticRegression`` has 0.967, curvature at 0.3, where it has 0.961.)
The particles' covariance fails once M < 2 d (rank deficient: the moves
cannot leave the particles' span; -2.96 nats already at d = 195); there
the diagonal, low-rank plus diagonal, Ledoit-Wolf and both curvatures are
within 0.65 nats of the reference up to d = 195, and only the curvature
reaches the posterior at d = 650: the diagonal keeps the prior-size variance of the softmax's
redundant direction and its steps are far too long across it (every
particle diverged at the first unadjusted chunk), and at the particles'
mean the curvature is too small (confident predictions) so that the
Metropolis-adjusted warm-up shrank its step to 0.0068 and the unadjusted
steps of ``learning_rate = 0.1`` left the cloud at a training
log-likelihood of -7190 against -40.7 at the mode (1080 CPU s).

digits, d = 650, M = 128, defaults (curvature averaged over the particles,
unadjusted steps capped by the warm-up's step), ``test_size=0.3``:

* the estimator (``random_state=0``), splits 0, 1, 2: test accuracy 0.957,
  0.970, 0.950 against ``LogisticRegression``'s 0.961, 0.980, 0.950; log Z
  -356.99 +- 0.44, -371.68 +- 0.47, -353.32 +- 0.47 (``log_evidence_std_``);
  156, 158, 157 CPU s (wall 2400 s at a load average of 30); annealing
  steps 100/42/24, 101/41/31, 100/43/28; no ConvergenceWarning (posterior
  gap 389, 370, 369 against the threshold 485);
* split 0 through the engine (``SGAISConfig()``, seed 0): accuracy 0.963,
  log Z -355.77, 151 CPU s (warm-up 136 s): 1.2 nats from the estimator's
  run with another sampler seed, more than its error bar;
* ``n_burnin=1`` (split 0): accuracy 0.939, log Z -412.94 (56 nats low),
  28 CPU s and no ConvergenceWarning: the collapsed cloud sits closer to
  the mode (posterior gap 324), so the gap check cannot see it (open).

The warm-up's step is 0.037 with the averaged curvature (0.0068 at the
mean); the exact draws of ``posterior_moments`` (split 0) have a training
log-likelihood of -79 +- 9 and a test accuracy of 0.955-0.963 with 32
draws. Through the engine (split 0, seed 0, warm-up to 1000 observations:
136 CPU s, training log-likelihood -198 and accuracy 0.946 there) the last
257 observations with unadjusted steps of 0.1 (no cap) ended at -119.4,
accuracy 0.952, log Z -359.52 (31 annealing steps, 19 CPU s); with the
cap (0.037) at -83.4, accuracy 0.963, log Z -355.77 (24 steps, 15 CPU s).

Earlier (the curvature at the mean), ``make_logistic_regression(2000,
n_features=24, n_classes=4, random_state=0)`` (d = 100, no split or
scaling) through the engine with ``SGAISConfig(n_particles=32)``: -838.87
against importance sampling -837.08 +- 0.01 (ESS 7.3% of 4e4), -1.8 nats;
M = 128 (between d and 2 d): curvature -839.05 (-2.0 nats, 25 CPU s),
covariance -865.33 (-28.3 nats, 22 CPU s): hence the rule ``M < 2 d``.

    OMP_NUM_THREADS=1 python benchmarks/bench_highdim.py                 # all
    OMP_NUM_THREADS=1 python benchmarks/bench_highdim.py --data digits --precond default \
        --splits 0 1 2
    OMP_NUM_THREADS=1 python benchmarks/bench_highdim.py --data paper synth100 \
        --particles 32 128 --precond low-rank curvature --test-size 0.25
"""

import argparse
import contextlib
import math
import time

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skevidence import EvidenceLogisticRegression
from skevidence.datasets import make_logistic_regression
from skevidence.inference import preconditioning
from skevidence.inference.kernels import ghmc, precision_preconditioner
from skevidence.models import LogisticRegressionModel, Model

PRECONDITIONERS = {
    "covariance": {"precondition": "covariance", "curvature_ratio": 0.0},
    "diagonal": {"precondition": "covariance", "curvature_ratio": 0.0},  # patched below
    "low-rank": {"precondition": "covariance", "curvature_ratio": 0.0},  # patched below
    "curv-mean": {"precondition": "curvature"},  # patched below
    "curvature": {"precondition": "curvature"},
    "default": {},
}


def diagonal(theta, W):
    """The covariance's diagonal, as a vector (the kernels apply a 1-d factor elementwise)."""
    var = W @ (theta - W @ theta) ** 2
    return torch.sqrt(var + 1e-12 * var.mean())


def low_rank_plus_diagonal(theta, W):
    """Cholesky factor of the covariance's top ``M / 4`` components plus the diagonal of the rest."""
    centred = (theta - W @ theta) * W.sqrt()[:, None]
    _, S, Vh = torch.linalg.svd(centred, full_matrices=False)
    r = max(1, theta.shape[0] // 4)
    top = (Vh[:r].T * S[:r]) @ (Vh[:r] * S[:r, None])
    rest = ((centred**2).sum(0) - torch.diagonal(top)).clamp_min(1e-12 * float((S**2).sum()))
    return torch.linalg.cholesky(top + torch.diag(rest))


@contextlib.contextmanager
def variant(precond):
    """Engine patches for the variants that are not engine settings."""
    saved = (preconditioning.covariance_preconditioner,
             LogisticRegressionModel.expected_fisher_information)
    if precond in ("diagonal", "low-rank"):
        preconditioning.covariance_preconditioner = {
            "diagonal": diagonal, "low-rank": low_rank_plus_diagonal}[precond]
    if precond == "curv-mean":  # the curvature at the particles' weighted mean
        LogisticRegressionModel.expected_fisher_information = Model.expected_fisher_information
    try:
        yield
    finally:
        (preconditioning.covariance_preconditioner,
         LogisticRegressionModel.expected_fisher_information) = saved


def load(name, split=0, test_size=0.3):
    if name == "paper":
        X, y = make_logistic_regression(1333, random_state=1)
    elif name.startswith("synth"):  # the paper's generator, 4 classes, d = 100 or 200
        p = {"synth100": 24, "synth200": 49}[name]
        X, y = make_logistic_regression(4 * (p + 1) * 4, n_features=p, n_classes=4,
                                        random_state=0)
    else:
        X, y = load_digits(return_X_y=True)
        if name == "digits3":
            keep = y < 3
            X, y = X[keep], y[keep]
    return train_test_split(X, y, test_size=test_size, random_state=split)


def posterior_mode(model, X, y, n_iter=100):
    """Damped Newton on the (log-concave) posterior; returns the mode and -Hessian."""
    def log_post(t):
        return float(model.log_prior(t[None]) + model.log_likelihood(t[None], (X, y)).sum())

    theta = torch.zeros(model.n_params, dtype=torch.float64)
    for _ in range(n_iter):
        grad = (model.grad_log_prior(theta[None]) + model.grad_log_likelihood(theta[None], (X, y)))[0]
        precision = model.prior_precision(theta) + model.fisher_information(theta, (X, y))
        step = torch.linalg.solve(precision, grad)
        current = log_post(theta)
        while log_post(theta + step) < current and float(step.abs().max()) > 1e-12:
            step = step / 2
        theta = theta + step
        if float(step.abs().max()) < 1e-10:
            break
    return theta, model.prior_precision(theta) + model.fisher_information(theta, (X, y))


def importance_sampling(model, X, y, mode, precision, n_samples=100_000, n_batches=20,
                        nu=10.0, seed=0):
    """log Z from a multivariate t at the Laplace approximation: estimate, standard error, ESS."""
    d = model.n_params
    chol = torch.linalg.cholesky(torch.linalg.inv(precision))
    log_det_half = torch.log(torch.diagonal(chol)).sum()
    gen = torch.Generator().manual_seed(seed)
    log_w, per_batch = [], []
    m = n_samples // n_batches
    for _ in range(n_batches):
        z = torch.randn(m, d, generator=gen, dtype=torch.float64)
        u = _chi2(gen, nu, m)
        theta = mode + (z / torch.sqrt(u / nu)[:, None]) @ chol.T
        log_q = (math.lgamma((nu + d) / 2) - math.lgamma(nu / 2) - 0.5 * d * math.log(nu * math.pi)
                 - log_det_half - 0.5 * (nu + d) * torch.log1p((z**2).sum(1) / u))
        # (z / sqrt(u/nu)) has squared norm nu |z|^2 / u, so the t kernel is log1p(|z|^2 / u).
        lw = model.log_prior(theta) + model.log_likelihood(theta, (X, y)).sum(1) - log_q
        log_w.append(lw)
        per_batch.append(float(torch.logsumexp(lw, 0)) - math.log(m))
    log_w = torch.cat(log_w)
    estimate = float(torch.logsumexp(log_w, 0)) - math.log(log_w.shape[0])
    se = float(np.std(per_batch, ddof=1)) / math.sqrt(n_batches)
    w = torch.softmax(log_w, 0)
    return estimate, se, float(1.0 / (w**2).sum()) / log_w.shape[0]


def _chi2(gen, nu, m):
    # Chi-square(nu) draws from the private generator: sum of squared normals (nu integer).
    return (torch.randn(m, int(nu), generator=gen, dtype=torch.float64) ** 2).sum(1)

def posterior_moments(model, X, y, mode, precision, n_chains=64, n_rounds=20, seed=0):
    """Mean and covariance of exact GHMC draws (the second half of ``n_rounds`` x 100 steps).

    The chains start at the Laplace approximation and are preconditioned by
    the particles' mean curvature (``expected_fisher_information``).
    """
    gen = torch.Generator().manual_seed(seed)
    theta = mode + torch.randn(n_chains, model.n_params, generator=gen,
                               dtype=torch.float64) @ precision_preconditioner(precision).T
    W = torch.full((n_chains,), 1.0 / n_chains, dtype=torch.float64)

    def log_post(t):
        ll, g = model.log_likelihood_and_grad(t, (X, y))
        return ll + model.log_prior(t), g + model.grad_log_prior(t)

    step, draws = 0.05, []
    for k in range(n_rounds):
        chol = precision_preconditioner(model.expected_fisher_information(theta, W, (X, y))
                                        + model.prior_precision(mode))
        for _ in range(5):
            theta, acceptance = ghmc(theta, log_post, 20, step, 0.2, chol, gen)
            step = min(max(step * math.exp(2 * (acceptance - 0.8)), 1e-4), 4.0)
            if k >= n_rounds // 2:
                draws.append(theta)
    draws = torch.cat(draws)
    return draws.mean(0), torch.cov(draws.T)


def _t_log_density_and_grad(theta, mean, chol, nu):
    """Multivariate t (location ``mean``, scale ``chol chol^T``, ``nu`` dof) and its gradient."""
    d = theta.shape[1]
    z = torch.linalg.solve_triangular(chol, (theta - mean).T, upper=False).T
    delta = (z**2).sum(1)
    log_q = (math.lgamma((nu + d) / 2) - math.lgamma(nu / 2) - 0.5 * d * math.log(nu * math.pi)
             - torch.log(torch.diagonal(chol)).sum() - 0.5 * (nu + d) * torch.log1p(delta / nu))
    sigma_inv_x = torch.linalg.solve_triangular(chol.T, z.T, upper=True).T
    return log_q, -((nu + d) / (nu + delta))[:, None] * sigma_inv_x


def annealed_reference(model, X, y, mean, cov, n_chains=256, n_temps=400, n_steps=5, nu=10.0,
                       n_batches=8, seed=0):
    """log Z by annealed importance sampling from a t at the posterior's moments.

    Where importance sampling from the t alone has no usable ESS (digits is
    nearly separable and its posterior far from Gaussian), AIS (Neal 2001)
    bridges the t and the posterior in ``n_temps`` geometric steps
    ``q^(1 - b) p^b``, ``b = (k / n_temps)^4``, each followed by ``n_steps``
    exact (Metropolis-adjusted) GHMC steps. Its estimate of ``Z`` is
    unbiased whatever the mixing; returns the estimate, its standard error
    (spread of ``n_batches`` batches), the ESS fraction and the acceptance.
    """
    gen = torch.Generator().manual_seed(seed)
    chol = torch.linalg.cholesky(cov)
    z = torch.randn(n_chains, model.n_params, generator=gen, dtype=torch.float64)
    theta = mean + (z / torch.sqrt(_chi2(gen, nu, n_chains) / nu)[:, None]) @ chol.T

    def log_post(t):
        ll, g = model.log_likelihood_and_grad(t, (X, y))
        return ll + model.log_prior(t), g + model.grad_log_prior(t)

    betas = np.linspace(0.0, 1.0, n_temps + 1) ** 4
    log_w = torch.zeros(n_chains, dtype=torch.float64)
    step, acceptances = 0.1, []
    for b0, b1 in zip(betas[:-1], betas[1:]):
        log_q = _t_log_density_and_grad(theta, mean, chol, nu)[0]
        log_w += (b1 - b0) * (log_post(theta)[0] - log_q)

        def target(t, b=b1):
            lp, gp = log_post(t)
            lq, gq = _t_log_density_and_grad(t, mean, chol, nu)
            return (1 - b) * lq + b * lp, (1 - b) * gq + b * gp

        theta, acceptance = ghmc(theta, target, n_steps, step, 0.2, chol, gen)
        step = min(max(step * math.exp(2 * (acceptance - 0.8)), 1e-4), 4.0)
        acceptances.append(acceptance)
    batches = [float(torch.logsumexp(w, 0)) - math.log(w.shape[0])
               for w in log_w.chunk(n_batches)]
    w = torch.softmax(log_w, 0)
    return (float(torch.logsumexp(log_w, 0)) - math.log(n_chains),
            float(np.std(batches, ddof=1)) / math.sqrt(n_batches),
            float(1.0 / (w**2).sum()) / n_chains, float(np.mean(acceptances)))


def reference(data, split, test_size, max_d_is=200):
    """(log Z, standard error, ESS fraction, method) on the training data of ``data``."""
    Xtr, _, ytr, _ = load(data, split, test_size)
    Xs = torch.as_tensor(StandardScaler().fit_transform(Xtr))
    yt = torch.as_tensor(np.searchsorted(np.unique(ytr), ytr))
    model = LogisticRegressionModel(Xs.shape[1], len(np.unique(ytr)))
    mode, precision = posterior_mode(model, Xs, yt)
    if model.n_params <= max_d_is and data not in ("digits", "digits3"):
        return (*importance_sampling(model, Xs, yt, mode, precision), "IS")
    mean, cov = posterior_moments(model, Xs, yt, mode, precision)
    est, se, ess, _ = annealed_reference(model, Xs, yt, mean, cov)
    return est, se, ess, "AIS"


def run(data, precond, n_particles, seed, split=0, test_size=0.3):
    Xtr, Xte, ytr, yte = load(data, split, test_size)
    baseline = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(Xtr, ytr)
    est = EvidenceLogisticRegression(n_particles=n_particles, random_state=seed,
                                     engine_options=PRECONDITIONERS[precond])
    pipe = make_pipeline(StandardScaler(), est)
    wall, cpu = time.perf_counter(), time.process_time()
    failed = None
    with variant(precond), warnings_caught() as caught:
        try:
            pipe.fit(Xtr, ytr)
        except FloatingPointError as exc:
            failed = str(exc)[:40]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    Xs = torch.as_tensor(pipe[0].transform(Xtr))
    yt = torch.as_tensor(np.searchsorted(np.unique(ytr), ytr))
    model = LogisticRegressionModel(Xs.shape[1], len(np.unique(ytr)))
    mode, _ = posterior_mode(model, Xs, yt)
    ll_mode = float(model.log_likelihood(mode[None], (Xs, yt)).sum())
    row = dict(d=model.n_params, acc_lr=baseline.score(Xte, yte), ll_mode=ll_mode, cpu=cpu,
               wall=wall, warned=any("ConvergenceWarning" in type(w.message).__name__
                                     for w in caught))
    if failed:
        row.update(acc=float("nan"), ll=float("nan"), logz=float("nan"), failed=failed)
    else:
        theta = torch.as_tensor(est.particles_)
        W = torch.as_tensor(est.particle_weights_)
        ll = float(W @ model.log_likelihood(theta, (Xs, yt)).sum(1))
        row.update(acc=pipe.score(Xte, yte), ll=ll, logz=est.log_evidence_)
    return row


@contextlib.contextmanager
def warnings_caught():
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["paper", "synth100", "digits3", "digits"])
    parser.add_argument("--precond", nargs="+", default=list(PRECONDITIONERS))
    parser.add_argument("--particles", nargs="+", type=int, default=[128])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--splits", nargs="+", type=int, default=[0])
    parser.add_argument("--test-size", type=float, default=0.3)
    parser.add_argument("--no-reference", action="store_true")
    args = parser.parse_args()
    print(f"{'data':>8} {'d':>4} {'split':>5} {'M':>4} {'precond':>11} {'seed':>4} {'acc':>6} "
          f"{'acc_LR':>6} {'ll':>8} {'ll_mode':>8} {'logZ':>9} {'ref':>9} {'se':>5} {'ESS':>6} "
          f"{'diff':>6} {'cpu_s':>6} {'wall_s':>6} warn", flush=True)
    for data in args.data:
        for split in args.splits:
            ref, se, ess = (float("nan"),) * 3
            if not args.no_reference:
                t = time.process_time()
                ref, se, ess, how = reference(data, split, args.test_size)
                print(f"# {data} split {split}: reference {how} {ref:.2f} +- {se:.2f} "
                      f"(ESS {ess:.3f}, {time.process_time() - t:.0f} CPU s)", flush=True)
            for M in args.particles:
                for precond in args.precond:
                    for seed in range(args.seeds):
                        r = run(data, precond, M, seed, split, args.test_size)
                        print(f"{data:>8} {r['d']:>4} {split:>5} {M:>4} {precond:>11} {seed:>4} "
                              f"{r['acc']:6.3f} {r['acc_lr']:6.3f} {r['ll']:8.1f} "
                              f"{r['ll_mode']:8.1f} {r['logz']:9.2f} {ref:9.2f} {se:5.2f} "
                              f"{ess:6.3f} {r['logz'] - ref:6.2f} {r['cpu']:6.1f} "
                              f"{r['wall']:6.1f} {'W' if r['warned'] else '-'} "
                              f"{r.get('failed', '')}", flush=True)


if __name__ == "__main__":
    main()
