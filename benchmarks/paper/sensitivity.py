"""Paper section 7.3: sensitivity of SGAIS to its settings, one at a time around the defaults.

On linear (exact evidence) and logistic regression (importance sampling at the mode), data
seed 1, over ``--seeds`` sampler seeds. Writes docs/paper/sensitivity.{png,csv,md} and the
raw results per model as JSON.
"""

import json
import time

import numpy as np

import _common as C
from _harness import arguments

DEFAULTS = {"n_particles": 128, "target_ess": 0.9, "learning_rate": 0.1, "n_burnin": 20,
            "batch_size": 500}
GRID = {
    "n_particles": [16, 32, 64, 128, 256],
    "target_ess": [0.1, 0.3, 0.5, 0.7, 0.9],
    "learning_rate": [0.01, 0.03, 0.1, 0.3, 1.0],
    "n_burnin": [5, 10, 20, 40],
    "batch_size": [100, 250, 500, 1000],
    # Figure 8: the learning rate with learning_rate * n_burnin = 2 (n_burnin = 2 / lr).
    "learning_rate (x n_burnin = 2)": [0.05, 0.1, 0.2, 0.4],
}
SIZES = {"quick": {"linear": 5000, "logistic": 2000},
         "full": {"linear": 20_000, "logistic": 10_000}}
COLUMNS = ["model", "N", "parameter", "value", "mean error", "error sd", "relative error",
           "mean log Z std", "CPU s", "annealing steps", "warned runs"]
FORMATS = {"value": "g", "mean error": "+.2f", "error sd": ".2f", "relative error": ".1e",
           "mean log Z std": ".2f", "CPU s": ".1f", "annealing steps": ".0f"}


def settings(parameter, value):
    """Estimator keyword arguments of one point of the grid."""
    if parameter.startswith("learning_rate (x"):
        return {"learning_rate": value, "n_burnin": int(round(2.0 / value))}
    return {parameter: value}


def point_key(kwargs):
    return json.dumps(sorted({**DEFAULTS, **kwargs}.items()))


def reference(model, X, y):
    cls, params, _ = C.MODELS[model]
    if model == "linear":
        return cls(**params).exact_log_evidence(X, y)
    from bench_logistic_stream import importance_sampling

    draws = max(4000, int(2e7 // len(y)))
    return importance_sampling(X, y, len(np.unique(y)), n_samples=draws)[0]


def run_point(model, X, y, ref, kwargs, seeds, cache):
    """Errors, stds, CPU times, steps and warnings over the seeds (cached by setting)."""
    key = point_key(kwargs)
    if key in cache:
        return cache[key]
    cls, params, _ = C.MODELS[model]
    out = {"error": [], "std": [], "time": [], "steps": [], "warned": 0}
    for seed in range(seeds):
        est = C.make_estimator(cls, "sgais", params, random_state=seed, **kwargs)
        seconds, caught = C.fit_timed(est, X, y)
        for k, v in (("error", est.log_evidence_ - ref), ("std", C.std_of(est)), ("time", seconds),
                     ("steps", int(est.evidence_trace_["n_annealing_steps"].sum()))):
            out[k].append(v)
        out["warned"] += any("trustworthy" in m or "n_particles" in m for m in caught)
    cache[key] = out
    return out


def plot(rows):
    import matplotlib.pyplot as plt  # Agg, set by _common

    fig, axes = plt.subplots(3, len(GRID), figsize=(3.1 * len(GRID), 8), squeeze=False)
    for j, parameter in enumerate(GRID):
        for model, marker in (("linear", "o-"), ("logistic", "s--")):
            sel = [r for r in rows if r["model"] == model and r["parameter"] == parameter]
            if not sel:
                continue
            x = np.array([r["value"] for r in sel], dtype=float)
            axes[0, j].errorbar(x, [r["mean error"] for r in sel], [r["error sd"] for r in sel],
                                fmt=marker, capsize=3, ms=4, label=model)
            axes[1, j].plot(x, [r["CPU s"] for r in sel], marker, ms=4, label=model)
            axes[2, j].plot(x, [r["annealing steps"] for r in sel], marker, ms=4, label=model)
        base = DEFAULTS.get(parameter, DEFAULTS["learning_rate"])
        for i in range(3):
            axes[i, j].axvline(base, color="0.7", lw=0.8, ls=":")
            if parameter != "target_ess":
                axes[i, j].set_xscale("log")
        axes[0, j].axhline(0.0, color="k", lw=0.8)
        axes[0, j].set_title(parameter, fontsize=9)
        axes[2, j].set_xlabel(parameter.split(" ")[0], fontsize=8)
    axes[0, 0].set_ylabel("log Z - reference (nats)\nmean +- sd over seeds")
    axes[1, 0].set(ylabel="fit time (CPU s)", yscale="log")
    axes[2, 0].set_ylabel("annealing steps (total)")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("Cameron, Eggers & Kroon (2019) section 7.3 on this machine: one setting "
                 "varied around the defaults (dotted)", fontsize=10)
    fig.tight_layout()
    return fig


def main():
    parser = arguments(__doc__)
    parser.add_argument("--quick", action="store_true", help="small N, 2 / 1 seeds (docs/paper)")
    parser.add_argument("--seeds", type=int, help="sampler seeds 0..seeds-1")
    parser.add_argument("--models", nargs="+", choices=["linear", "logistic"],
                        default=["linear", "logistic"])
    parser.add_argument("--reuse", action="store_true", help="keep the settings already in "
                        "sensitivity.MODEL.json (same N and seeds), run the others")
    parser.add_argument("--draw-only", action="store_true",
                        help="run nothing: draw the table and figure from the raw results")
    args = parser.parse_args()
    args.reuse = args.reuse or args.draw_only
    # Quick mode: 2 seeds of the linear model, 1 of the (slower) logistic model.
    seed_counts = {"linear": 2, "logistic": 1} if args.quick else {"linear": 5, "logistic": 5}
    sizes = SIZES["quick" if args.quick else "full"]
    C.single_thread()
    rows, t0 = [], time.perf_counter()
    for model in args.models:
        seeds = args.seeds or seed_counts[model]
        X, y = C.MODELS[model][2](sizes[model])
        # One file of raw results per model: models can run in parallel processes.
        raw = C.OUTDIR / f"sensitivity.{model}.json"
        store = json.loads(raw.read_text()) if args.reuse and raw.exists() else {}
        if args.draw_only and not store:
            continue
        if store.get("N") != sizes[model] or store.get("seeds") != seeds:
            store = {"N": sizes[model], "seeds": seeds, "reference": reference(model, X, y),
                     "points": {}}
        ref = store["reference"]
        for parameter in GRID:
            for value in GRID[parameter]:
                kwargs = settings(parameter, value)
                if args.draw_only and point_key(kwargs) not in store["points"]:
                    continue  # not measured in the runs drawn from
                res = run_point(model, X, y, ref, kwargs, seeds, store["points"])
                C.OUTDIR.mkdir(parents=True, exist_ok=True)
                raw.write_text(json.dumps(store, indent=1))
                err = np.array(res["error"])
                rows.append({"model": model, "N": sizes[model], "parameter": parameter,
                             "value": value, "mean error": err.mean(),
                             "error sd": err.std(ddof=1) if err.size > 1 else float("nan"),
                             "relative error": np.abs(err).mean() / abs(ref),
                             "mean log Z std": np.mean(res["std"]), "CPU s": np.mean(res["time"]),
                             "annealing steps": np.mean(res["steps"]),
                             "warned runs": f"{res['warned']}/{seeds}"})
            print(f"[{model} {parameter}: {time.perf_counter() - t0:.0f} s]", flush=True)
    C.write_table(rows, COLUMNS, "sensitivity", FORMATS)
    C.save_figure(plot(rows), "sensitivity")


if __name__ == "__main__":
    main()
