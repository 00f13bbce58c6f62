"""Paper section 7.2: online evidence under distribution shift (3 -> 5 -> 7 clusters).

EvidenceGMM with 3, 5 and 7 components on ``make_shifting_clusters``, in stream order and
shuffled. Writes docs/paper/distribution_shift.{png,csv,md} (``--quick``: N = 20_000).
"""

import time

import numpy as np

import _common as C
from skevidence import EvidenceGMM
from skevidence.datasets import make_shifting_clusters
from _harness import arguments

CHANGE_POINTS = (1000, 10_000)
COLUMNS = ["K", "order", "N", "log Z", "log Z / N", "log Z std", "in-order - shuffled",
           "lpd before 1e3", "lpd after 1e3", "lpd before 1e4", "lpd after 1e4",
           "steps after 1e3", "steps after 1e4", "median steps > 1e4", "time s", "warnings"]
FORMATS = {"log Z": ".1f", "log Z / N": ".4f", "log Z std": ".2f",
           "in-order - shuffled": "+.1f", "lpd before 1e3": ".3f", "lpd after 1e3": ".3f",
           "lpd before 1e4": ".3f", "lpd after 1e4": ".3f", "median steps > 1e4": ".0f",
           "time s": ".1f"}


def chunk_summary(trace):
    """Per-chunk mean log predictive density and annealing steps around the change points."""
    n, log_z, steps = trace["n_seen"], trace["log_evidence"], trace["n_annealing_steps"]
    lpd = np.diff(np.concatenate([[0.0], log_z])) / np.diff(np.concatenate([[0], n]))
    out = {}
    for cp, tag in zip(CHANGE_POINTS, ("1e3", "1e4")):
        before, after = np.flatnonzero(n <= cp), np.flatnonzero(n > cp)
        if before.size and after.size:
            out[f"lpd before {tag}"] = lpd[before[-1]]
            out[f"lpd after {tag}"] = lpd[after[0]]
            out[f"steps after {tag}"] = int(steps[after[0]])
    late = steps[n > CHANGE_POINTS[1] + 500]
    if late.size:
        out["median steps > 1e4"] = float(np.median(late))
    return out


def plot(traces, n_total):
    import matplotlib.pyplot as plt  # Agg, set by _common

    fig, (ax_z, ax_s) = plt.subplots(1, 2, figsize=(12, 4))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, k in enumerate(sorted({k for k, _ in traces})):
        for order, style in (("in order", "-"), ("shuffled", "--")):
            tr = traces[(k, order)]
            ax_z.plot(tr["n_seen"], tr["log_evidence"] / tr["n_seen"], style, color=colours[i],
                      label=f"K = {k}, {order}")
            if order == "in order":
                ax_s.plot(tr["n_seen"], tr["n_annealing_steps"], color=colours[i],
                          label=f"K = {k}")
    for ax in (ax_z, ax_s):
        for cp in [cp for cp in CHANGE_POINTS if cp < n_total]:
            ax.axvline(cp, color="0.6", lw=0.8, ls=":")
        ax.set(xscale="log", xlabel="observations n")
        ax.legend(fontsize=8)
    ax_z.set(ylabel="log Z / n", title="(a) evidence per observation; change points dotted")
    ax_s.set(yscale="log", ylabel="annealing steps of the chunk",
             title="(b) annealing steps, data in order")
    fig.suptitle("Cameron, Eggers & Kroon (2019) section 7.2 on this machine: EvidenceGMM, "
                 "3 -> 5 -> 7 clusters", fontsize=10)
    fig.tight_layout()
    return fig


def main():
    parser = arguments(__doc__)
    parser.add_argument("--quick", action="store_true", help="N = 20_000 (docs/paper)")
    parser.add_argument("--n", type=int, default=None, help="observations (default 100_000)")
    parser.add_argument("--components", nargs="+", type=int, default=[3, 5, 7])
    parser.add_argument("--seed", type=int, default=0, help="sampler seed")
    args = parser.parse_args()
    n = args.n or (20_000 if args.quick else 100_000)
    C.single_thread()
    X, _ = make_shifting_clusters(n, random_state=1)
    shuffled = X[np.random.default_rng(1).permutation(n)]
    rows, traces = [], {}
    for k in args.components:
        for order, data in (("in order", X), ("shuffled", shuffled)):
            est = C.make_estimator(EvidenceGMM, "sgais", C.GMM_PAPER, random_state=args.seed,
                                   n_components=k)
            seconds, caught = C.fit_timed(est, data, None, clock=time.perf_counter)
            traces[(k, order)] = est.evidence_trace_
            rows.append({"K": k, "order": order, "N": n, "log Z": est.log_evidence_,
                         "log Z / N": est.log_evidence_ / n, "log Z std": C.std_of(est),
                         "time s": seconds, "warnings": str(len(caught)),
                         **chunk_summary(est.evidence_trace_)})
            print(f"[K = {k} {order}: {seconds:.0f} s]", flush=True)
        rows[-2]["in-order - shuffled"] = rows[-2]["log Z"] - rows[-1]["log Z"]
    C.write_table(rows, COLUMNS, "distribution_shift", FORMATS)
    best = max((r for r in rows if r["order"] == "shuffled"), key=lambda r: r["log Z"])
    print(f"highest evidence (shuffled): K = {best['K']}")
    C.save_figure(plot(traces, n), "distribution_shift")


if __name__ == "__main__":
    main()
