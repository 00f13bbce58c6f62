"""GP-classifier marginal likelihood: SGAIS over seeds against a long reference.

Takes the model, data and importance sampler of
``examples/plot_gp_classifier.py``; per kernel length-scale: scikit-learn's
Laplace approximation, importance sampling from a t at the Laplace fit with
``--blocks`` x 100_000 draws (the reference), and SGAIS over ``--seeds``:
its mean, spread, mean reported std, the mean's error in standard errors
and the CPU seconds of a run.
"""

import math
import runpy
from pathlib import Path

import matplotlib
import numpy as np
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

import skevidence
from _harness import arguments, over_seeds

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plot_gp_classifier.py"


def reference(example, model, y, blocks):
    """Independent importance-sampling runs of 100_000 draws, pooled."""
    runs = [example["importance_sampling"](model, y, n_draws=100_000, seed=s)
            for s in range(blocks)]
    log_z = np.array([r[0] for r in runs])
    std = np.array([r[1] for r in runs])
    # The pooled estimate averages Z; its relative error is the runs' over sqrt(blocks).
    top = log_z.max()
    pooled = top + math.log(np.mean(np.exp(log_z - top)))
    return pooled, math.sqrt(np.mean(std**2) / blocks)


def main():
    parser = arguments(__doc__)
    parser.add_argument("--length-scales", type=float, nargs="+", default=[0.3, 1.0, 3.0, 10.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(8)))
    parser.add_argument("--particles", type=int, default=128)
    parser.add_argument("--blocks", type=int, default=10)
    args = parser.parse_args()
    matplotlib.use("Agg")
    example = runpy.run_path(str(EXAMPLE), run_name="gp_example")
    X, y, n = example["X"], example["y"], example["n"]
    index = np.arange(n, dtype=float)[:, None]
    print(f"GP classifier, iris versicolor/virginica, n = {n}, {args.particles} particles, "
          f"seeds {args.seeds}, reference {args.blocks} x 1e5 draws")
    print(f"{'length':>7} {'Laplace':>9} {'reference':>10} {'+-':>6} {'SGAIS mean':>10} "
          f"{'sd seeds':>8} {'mean std':>8} {'err/sem':>7} {'cpu s':>6}")
    for length_scale in args.length_scales:
        kernel = ConstantKernel(4.0, "fixed") * RBF(length_scale, "fixed")
        laplace = GaussianProcessClassifier(kernel=kernel, optimizer=None).fit(X, y)
        model = example["GPClassifierLatent"](kernel(X))
        ref, ref_std = reference(example, model, y, args.blocks)
        estimates, stds, cpu = over_seeds(lambda seed: skevidence.log_evidence(
            model, index, y, n_particles=args.particles, random_state=seed), args.seeds)
        sem = estimates.std(ddof=1) / math.sqrt(len(estimates))
        print(f"{length_scale:7.2f} {laplace.log_marginal_likelihood_value_:9.3f} {ref:10.3f} "
              f"{ref_std:6.3f} {estimates.mean():10.3f} {estimates.std(ddof=1):8.3f} "
              f"{np.mean(stds):8.3f} {(estimates.mean() - ref) / math.hypot(sem, ref_std):7.2f} "
              f"{np.mean(cpu):6.2f}")


if __name__ == "__main__":
    main()
