"""The gallery's user-written models: SGAIS over seeds against an independent value.

``--model gp`` (``examples/plot_gp_classifier.py``, importance-sampling reference) or
``--model rbm`` (``examples/plot_rbm_partition.py``, the exact log partition function).
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

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def pooled_importance_sampling(example, model, y, blocks):
    """Independent importance-sampling runs of 100_000 draws, pooled: log Z, its error."""
    log_z, std = np.array([example["importance_sampling"](model, y, n_draws=100_000, seed=s)[:2]
                           for s in range(blocks)], dtype=float).T
    # The pooled estimate averages Z; its relative error is the runs' over sqrt(blocks).
    top = log_z.max()
    return top + math.log(np.mean(np.exp(log_z - top))), math.sqrt(np.mean(std**2) / blocks)


def gp_rows(args):
    """Per length-scale: a label, the reference and its error, and ``fit(seed)``."""
    example = runpy.run_path(str(EXAMPLES / "plot_gp_classifier.py"), run_name="gp_example")
    X, y = example["X"], example["y"]
    index = np.arange(example["n"], dtype=float)[:, None]
    for length_scale in args.values or [0.3, 1.0, 3.0, 10.0]:
        kernel = ConstantKernel(4.0, "fixed") * RBF(length_scale, "fixed")
        laplace = GaussianProcessClassifier(kernel=kernel, optimizer=None).fit(X, y)
        model = example["GPClassifierLatent"](kernel(X))
        ref, ref_std = pooled_importance_sampling(example, model, y, args.blocks)
        label = f"length {length_scale:.2f} Laplace {laplace.log_marginal_likelihood_value_:.3f}"
        yield label, ref, ref_std, lambda seed, model=model: skevidence.log_evidence(
            model, index, y, n_particles=args.particles, random_state=seed), 0.0


def rbm_rows(args):
    """Per weight scale: a label, the exact value (no error), and ``fit(seed)``."""
    example = runpy.run_path(str(EXAMPLES / "plot_rbm_partition.py"), run_name="rbm_example")
    b, c, W_unit, D = example["b"], example["c"], example["W_unit"], example["D"]
    for scale in args.values or [0.25, 0.5, 1.0, 2.0, 3.0]:
        W = scale * W_unit
        data = np.column_stack([W.T, c])
        # The visible marginal's evidence lacks the Gaussian normaliser of the partition function.
        yield (f"scale {scale:.2f}", example["exact_log_partition"](W, b, c), 0.0,
               lambda seed, data=data: skevidence.log_evidence(
                   example["RBMVisibleMarginal"](b), data, n_particles=args.particles,
                   random_state=seed), 0.5 * D * math.log(2 * math.pi))


def main():
    parser = arguments(__doc__)
    parser.add_argument("--model", choices=["gp", "rbm"], required=True)
    parser.add_argument("--values", type=float, nargs="+", default=None,
                        help="length-scales (gp) or weight scales (rbm)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(8)))
    parser.add_argument("--particles", type=int, default=128)
    parser.add_argument("--blocks", type=int, default=10, help="reference draws / 1e5 (gp)")
    args = parser.parse_args()
    matplotlib.use("Agg")
    print(f"{args.model}, {args.particles} particles, seeds {args.seeds}")
    print(f"{'':<34} {'reference':>10} {'+-':>6} {'SGAIS mean':>10} {'sd seeds':>8} "
          f"{'mean std':>8} {'err/sem':>7} {'in 2 std':>8} {'cpu s':>6}")
    for label, ref, ref_std, fit, offset in (gp_rows if args.model == "gp" else rbm_rows)(args):
        estimates, stds, cpu = over_seeds(fit, args.seeds)
        estimates = estimates + offset
        sem = estimates.std(ddof=1) / math.sqrt(len(estimates))
        inside = np.mean(np.abs(estimates - ref) <= 2 * stds)
        print(f"{label:<34} {ref:10.3f} {ref_std:6.3f} {estimates.mean():10.3f} "
              f"{estimates.std(ddof=1):8.3f} {np.mean(stds):8.3f} "
              f"{(estimates.mean() - ref) / math.hypot(sem, ref_std):7.2f} {inside:8.0%} "
              f"{np.mean(cpu):6.2f}", flush=True)


if __name__ == "__main__":
    main()
