"""RBM log partition function: SGAIS over seeds against exact enumeration.

Takes the model and machine of ``examples/plot_rbm_partition.py`` (10
visible, 16 hidden units, weights ``scale * W_unit``); per weight scale: the
exact log Z, the SGAIS mean over ``--seeds``, their spread, the mean
reported std, the mean's error in standard errors, the share within 2 std,
the CPU seconds of a run.
"""

import math
import runpy
from pathlib import Path

import matplotlib
import numpy as np

import skevidence
from _harness import arguments, over_seeds

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plot_rbm_partition.py"


def main():
    parser = arguments(__doc__)
    parser.add_argument("--scales", type=float, nargs="+", default=[0.25, 0.5, 1.0, 2.0, 3.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(8)))
    parser.add_argument("--particles", type=int, default=128)
    args = parser.parse_args()
    matplotlib.use("Agg")
    example = runpy.run_path(str(EXAMPLE), run_name="rbm_example")
    b, c, W_unit, D = example["b"], example["c"], example["W_unit"], example["D"]
    print(f"Gaussian-Bernoulli RBM, D = {D}, H = {len(c)}, {args.particles} particles, "
          f"seeds {args.seeds}")
    print(f"{'scale':>6} {'exact':>10} {'SGAIS mean':>10} {'sd seeds':>8} {'mean std':>8} "
          f"{'err/sem':>7} {'in 2 std':>8} {'cpu s':>6}")
    for scale in args.scales:
        W = scale * W_unit
        exact = example["exact_log_partition"](W, b, c)
        data = np.column_stack([W.T, c])
        estimates, stds, cpu = over_seeds(lambda seed: skevidence.log_evidence(
            example["RBMVisibleMarginal"](b), data, n_particles=args.particles,
            random_state=seed), args.seeds)
        estimates = estimates + 0.5 * D * math.log(2 * math.pi)
        sem = estimates.std(ddof=1) / math.sqrt(len(estimates))
        inside = np.mean(np.abs(estimates - exact) <= 2 * stds)
        print(f"{scale:6.2f} {exact:10.3f} {estimates.mean():10.3f} {estimates.std(ddof=1):8.3f} "
              f"{stds.mean():8.3f} {(estimates.mean() - exact) / sem:7.2f} {inside:8.0%} "
              f"{np.mean(cpu):6.2f}")


if __name__ == "__main__":
    main()
