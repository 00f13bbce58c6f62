"""to_inference_data on diabetes against the exact conjugate posterior.

Per particle count, draws per particle and seed: ``az.summary``'s and the particles'
deviations from the exact means (in posterior sd), ESS, PSIS-LOO against the exact LOO.
"""

import arviz as az
import numpy as np
import torch
from scipy import stats
from sklearn.datasets import load_diabetes
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skevidence import EvidenceLinearRegression
from skevidence.models._linear_conjugate import conjugate_update
from _harness import Timed, arguments, caught_warnings


def exact_posterior(reg, X, y):
    """Exact posterior mean and sd of ``[coef, intercept]`` and exact LOO terms ``[n]``."""
    model = reg._model
    Phi, r, L, m = conjugate_update(model, (torch.tensor(X), torch.tensor(y)))
    n = y.shape[0]
    Ainv, Phi_n = torch.cholesky_inverse(L).numpy(), Phi.numpy()
    e = (r - Phi @ m).numpy()
    quad = e @ e + float(m @ m) / model.prior_std**2
    # beta | y is multivariate t with 2 a_n dof, covariance b_n / (a_n - 1) A^-1
    a_n, b_n = 1.0 + 0.5 * n, model.noise_prior_scale**2 + 0.5 * quad
    mean = (model._prior_mean(Phi) + m).numpy()
    sd = np.sqrt(np.diag(Ainv) * b_n / (a_n - 1.0))
    # y_i | y_-i: Student t from the rank-one downdate of the full posterior
    h = np.einsum("ij,jk,ik->i", Phi_n, Ainv, Phi_n)
    a_i = 1.0 + 0.5 * (n - 1)
    b_i = model.noise_prior_scale**2 + 0.5 * (quad - e**2 / (1 - h))
    loo = stats.t.logpdf(e / (1 - h), df=2 * a_i, scale=np.sqrt(b_i / (a_i * (1 - h))))
    return mean, sd, loo


def main():
    parser = arguments(__doc__)
    parser.add_argument("--particles", type=int, nargs="+", default=[128, 1024, 4096])
    parser.add_argument("--draws-factor", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    print(f"{'M':>5} {'draws':>6} {'seed':>4} {'coef dev/sd':>11} {'particles':>9} {'ESS':>6} "
          f"{'LOO-exact':>9} {'max k':>6} {'k>0.7':>5} {'fit s':>6} {'export s':>8}")
    for M in args.particles:
        for seed in range(args.seeds):
            pipe = make_pipeline(StandardScaler(),
                                 EvidenceLinearRegression(n_particles=M, random_state=seed))
            pipe.set_output(transform="pandas")
            with Timed() as fit:
                pipe.fit(X, y)
            reg, Xs = pipe[-1], pipe[0].transform(X)
            mean, sd, loo_exact = exact_posterior(reg, Xs.to_numpy(copy=True),
                                                  y.to_numpy(copy=True))
            p, W = Xs.shape[1], reg.particle_weights_
            particle_dev = np.abs(W @ reg.particles_[:, :p] - mean[:p]) / sd[:p]
            for factor in args.draws_factor:
                with Timed() as export:
                    idata = reg.to_inference_data(Xs, y, n_draws=factor * M, random_state=seed)
                summary = az.summary(idata, var_names=["coef"], kind="stats")
                assert list(summary.index) == [f"coef[{name}]" for name in Xs.columns]
                dev = np.abs(summary["mean"].to_numpy() - mean[:p]) / sd[:p]
                with caught_warnings():  # az.loo warns of the Pareto k the table shows
                    loo = az.loo(idata, pointwise=True)
                elpd = loo.elpd_loo if hasattr(loo, "elpd_loo") else loo.elpd
                k = np.asarray(loo.pareto_k)
                print(f"{M:>5} {factor * M:>6} {seed:>4} {dev.max():>11.3f} "
                      f"{particle_dev.max():>9.3f} {1 / np.sum(W**2):>6.0f} "
                      f"{elpd - loo_exact.sum():>+9.2f} {k.max():>6.2f} {(k > 0.7).sum():>5} "
                      f"{fit.wall:>6.1f} {export.wall:>8.2f}")


if __name__ == "__main__":
    main()
