"""Paper section 7.1: log Z / N and run time against N, every method on the three models.

References: exact (linear), importance sampling at the mode (logistic), the stored dynesty
runs (mixture); paper priors, data seed 1, sampler seed 0, CPU seconds. Writes
docs/paper/evidence_vs_n.{png,csv,md}, raw JSON per model and method and the speed ratios.
"""

import json
import signal
import time

import numpy as np
from sklearn.base import is_classifier

import _common as C
from _harness import arguments

GRIDS = {
    "quick": {"linear": [1000, 3000, 10_000, 30_000, 100_000],
              "logistic": [1000, 3000, 10_000], "gmm": [1000, 3000, 10_000]},
    "full": {"linear": [1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000],
             "logistic": [1000, 2000, 5000, 10_000, 20_000],
             "gmm": [1000, 2000, 5000, 10_000, 20_000]},
}
# The reference nested-sampling runs on the mixture (dynesty, static sampler, 500 live
# points, random slices; 4 runs at N = 1e3, 2 at 1e4): mean, error.
GMM_DYNESTY_REFERENCE = {1000: (-4494.94, 0.89), 10_000: (-44096.59, 0.30)}
# An independent one (tempered SMC from t's at the EM modes, seeds 0 and 1), which misses
# modes no EM start reaches: its gap to dynesty is the reference's uncertainty (error panel).
GMM_SMC_REFERENCE = {1000: -4496.26, 10_000: -44100.77}
COLUMNS = ["model", "method", "N", "log Z", "log Z / N", "reference", "ref. source", "error",
           "relative error", "log Z std", "CPU s", "status"]
FORMATS = {"log Z": ".2f", "log Z / N": ".5f", "reference": ".2f", "error": "+.2f",
           "relative error": ".1e", "log Z std": ".2f", "CPU s": ".1f"}


def references(model, sizes, quick):
    """``{N: (value, standard error, source)}`` where a reference exists."""
    cls, params, data = C.MODELS[model]
    out = {}
    for n in sizes:
        X, y = data(n)
        if model == "linear":
            out[n] = (cls(**params).exact_log_evidence(X, y), 0.0, "exact")
        elif model == "logistic":
            from bench_logistic_stream import importance_sampling

            # Fewer proposal draws in quick mode; the standard error says how good.
            draws = max(4000, int((2e7 if quick else 2e8) // n))
            out[n] = (*importance_sampling(X, y, len(np.unique(y)), n_samples=draws)[:2],
                      "importance sampling")
        elif n in GMM_DYNESTY_REFERENCE:
            out[n] = (*GMM_DYNESTY_REFERENCE[n], "dynesty")
    return out


class RunTimeout(Exception):
    """One fit ran past ``--run-timeout`` (or was stopped by hand: ``kill -ALRM``)."""


def _expire(signum, frame):
    raise RunTimeout


def timed_fit(est, X, y, timeout, **kwargs):
    """``C.fit_timed`` raising :class:`RunTimeout` after ``timeout`` seconds (SIGALRM)."""
    previous = signal.signal(signal.SIGALRM, _expire)
    signal.alarm(max(1, int(timeout)))
    try:
        return C.fit_timed(est, X, y, **kwargs)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def streamed(cls, method, params, X, y, timeout):
    """An estimator that ``partial_fit`` streams through, and ``fit_at(n)``: feed it up to
    observation n; the seconds are summed over the stream."""
    est = C.make_estimator(cls, method, params, random_state=0)
    # A classifier's first partial_fit must know every class.
    kwargs = {"classes": np.unique(y)} if is_classifier(est) else {}
    done = [0, 0.0]  # observations fed, seconds

    def fit_at(n):  # on a timeout, partial_fit restored the estimator as it was
        seconds, caught = timed_fit(est, X[done[0]:n], None if y is None else y[done[0]:n],
                                    timeout, how="partial_fit", **kwargs)
        done[:] = n, done[1] + seconds
        return est.log_evidence_, C.std_of(est), done[1], len(caught)
    return est, fit_at


def refit(cls, method, params, X, y, timeout):
    est = C.make_estimator(cls, method, params, random_state=0)
    seconds, caught = timed_fit(est, X, y, timeout)
    return est.log_evidence_, C.std_of(est), seconds, len(caught)


def dynesty_fit(X, y):
    """dynesty's static nested sampling (500 live points), the bench_*.py settings."""
    t = time.process_time()
    from bench_peers import Linear, nested_sampling

    log_z, err, _, _ = nested_sampling(Linear(len(y), data=(X, y)), 0)
    return log_z, err, time.process_time() - t, 0


def run_method(model, method, sizes, args):
    """One method on one model, at every N until one run took over ``--max-seconds`` or
    timed out (online methods stream the largest N once): ``{"status", "results": {N: [log
    Z, std, seconds, warnings]}, "trace": the online run's [n_seen, log_evidence]}``."""
    cls, params, data = C.MODELS[model]
    status = "available" if method == "dynesty" else C.method_status(cls, method)
    if status != "available":
        return {"status": status, "results": {}, "trace": None}
    est, results, timed_out = None, {}, None
    try:
        if method == "dynesty":
            fit_at = lambda n: dynesty_fit(*data(n))  # noqa: E731
        elif method in C.ONLINE_METHODS:
            est, fit_at = streamed(cls, method, params, *data(sizes[-1]), args.run_timeout)
        else:
            fit_at = lambda n: refit(cls, method, params, *data(n), args.run_timeout)  # noqa
        for n in sizes:
            try:
                results[n] = fit_at(n)
            except RunTimeout:
                timed_out = n
                break
            if results[n][2] > args.max_seconds:
                break
    except Exception as exc:  # one failing method must not lose the others' rows
        return {"status": f"failed: {type(exc).__name__}: {str(exc)[:80]}", "results": {},
                "trace": None}
    if not results:
        return {"status": f"timed out (one run at N = {timed_out} > {args.run_timeout:g} s)",
                "results": {}, "trace": None}
    trace = getattr(est, "evidence_trace_", None)
    return {"status": "ok", "results": {str(n): [float(v) for v in r] for n, r in results.items()},
            "trace": None if trace is None else [np.asarray(trace[k], float).tolist()
                                                 for k in ("n_seen", "log_evidence")],
            "max_seconds": args.max_seconds, "timed_out": timed_out,
            "run_timeout": args.run_timeout}


def table_rows(model, sizes, refs, runs):
    rows = []
    for method, run in runs.items():
        if run["status"] != "ok":
            rows.append({"model": model, "method": method, "status": run["status"]})
            continue
        for n in sizes:
            row = {"model": model, "method": method, "N": n}
            rows.append(row)
            if str(n) not in run["results"]:  # stop_note: a run stopped by hand (kill -ALRM)
                row["status"] = (run.get("stop_note", f"stopped after {run['run_timeout']:g} s")
                                 if n == run.get("timed_out")
                                 else f"not run (> {run['max_seconds']:g} s at a smaller N)")
                continue
            log_z, std, seconds, n_warn = run["results"][str(n)]
            row.update({"log Z": log_z, "log Z / N": log_z / n, "log Z std": std,
                        "CPU s": seconds, "status": f"ok, {n_warn:g} warning(s)" if n_warn
                        else "ok"})
            if n in refs:
                ref, _, source = refs[n]
                row.update({"reference": ref, "ref. source": source, "error": log_z - ref,
                            "relative error": abs(log_z - ref) / abs(ref)})
    return rows


def plot(store, models):
    import matplotlib.pyplot as plt  # Agg, set by _common

    fig, axes = plt.subplots(len(models), 3, figsize=(13, 3.3 * len(models)), squeeze=False)
    colours = dict(zip(C.METHODS + ("dynesty",), plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for (ax_z, ax_err, ax_t), model in zip(axes, models):
        refs = {int(n): v for n, v in store[model]["refs"].items()}
        for method, run in store[model]["runs"].items():
            if run["status"] != "ok":
                continue
            results, trace, c = run["results"], run["trace"], colours[method]
            ns = np.array(sorted(int(n) for n in results))
            log_z, seconds = np.array([results[str(n)] for n in ns])[:, [0, 2]].T
            style = "o-" if trace is not None else "s--"
            if trace is not None:  # an online run: its estimate after every chunk
                n_seen, trace_z = np.array(trace)
                ax_z.plot(n_seen, trace_z / n_seen, color=c, lw=1, label=method)
                ax_z.plot(ns, log_z / ns, "o", color=c, ms=4)
            else:
                ax_z.plot(ns, log_z / ns, "s--", color=c, ms=5, label=method)
            with_ref = [i for i, n in enumerate(ns) if n in refs]
            if with_ref:
                err = log_z[with_ref] - np.array([refs[n][0] for n in ns[with_ref]])
                ax_err.plot(ns[with_ref], err, style, color=c, label=method)
            ax_t.plot(ns, seconds, style, color=c, label=method)
        if refs:
            rn = np.array(sorted(refs))
            rv, se = np.array([refs[n][:2] for n in rn], dtype=float).T
            ax_z.plot(rn, rv / rn, "kx", ms=7, label=refs[rn[0]][2].split(" (")[0])
            ax_err.fill_between(rn, -2 * se, 2 * se, color="0.8", label="reference +- 2 s.e.")
            if model == "gmm":
                other = [n for n in rn if n in GMM_SMC_REFERENCE]
                ax_err.plot(other, [GMM_SMC_REFERENCE[n] - refs[n][0] for n in other], "kv",
                            ms=7, label="tempered-SMC reference")
        ax_err.axhline(0.0, color="k", lw=0.8)
        ax_z.set(xscale="log", xlabel="N", ylabel="log Z / N", title=f"{model}: log Z / N")
        ax_err.set(xscale="log", xlabel="N", ylabel="log Z - reference (nats)",
                   title=f"{model}: error")
        ax_t.set(xscale="log", yscale="log", xlabel="N", ylabel="CPU seconds",
                 title=f"{model}: run time (fit of the first N)")
        for ax in (ax_z, ax_err, ax_t):
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
    fig.suptitle("Cameron, Eggers & Kroon (2019) section 7.1 on this machine "
                 "(one thread, shared CPU)", fontsize=10)
    fig.tight_layout()
    return fig


def speedups(rows):
    """Lines saying how many times slower each method was than SGAIS at the largest common N."""
    lines, by = [], {}
    for r in rows:
        if r.get("status", "").startswith("ok"):
            by.setdefault((r["model"], r["method"]), {})[r["N"]] = r["CPU s"]
    for (model, method), times in sorted(by.items()):
        sg = by.get((model, "sgais"), {})
        common = sorted(set(times) & set(sg))
        if method == "sgais" or not common:
            continue
        n = common[-1]
        lines.append(f"{model}: {method} took {times[n] / sg[n]:.1f}x the time of sgais at "
                     f"N = {n} ({times[n]:.1f} s against {sg[n]:.1f} s)")
    return lines


def load_raw(model, sizes):
    """The stored references and runs (per method) of ``model`` on this grid."""
    refs, runs = None, {}
    for path in sorted(C.OUTDIR.glob(f"evidence_vs_n.{model}.*.json")):
        data = json.loads(path.read_text())
        if data["sizes"] == sizes:  # another grid: nothing to reuse
            refs = {int(n): tuple(v) for n, v in data["refs"].items()}
            runs[path.name[len(f"evidence_vs_n.{model}."):-len(".json")]] = data["run"]
    return refs, runs


def main():
    parser = arguments(__doc__)
    parser.add_argument("--quick", action="store_true", help="the small grids of docs/paper")
    parser.add_argument("--models", nargs="+", choices=list(C.MODELS), default=list(C.MODELS))
    parser.add_argument("--max-seconds", type=float, help="no larger N for a method after a "
                        "run this long (CPU s; default 30 with --quick, 1200 otherwise)")
    parser.add_argument("--dynesty", nargs="*", choices=["linear"], default=[],
                        help="also run dynesty (external nested sampling, 500 live points)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the stored runs that finished (same grid) and run the others")
    parser.add_argument("--run-timeout", type=float, help="stop a single fit after this many "
                        "wall-clock seconds (default 20 x --max-seconds: a loaded machine)")
    parser.add_argument("--methods", nargs="+", help="run only these methods (others are "
                        "kept from --reuse or listed as not run)")
    parser.add_argument("--draw-only", action="store_true",
                        help="run nothing: draw the table and figure from the raw results")
    args = parser.parse_args()
    args.reuse = args.reuse or args.draw_only
    args.max_seconds = args.max_seconds or (30.0 if args.quick else 1200.0)
    args.run_timeout = args.run_timeout or 20 * args.max_seconds
    C.single_thread()
    grid = GRIDS["quick" if args.quick else "full"]
    store, rows, t0 = {}, [], time.perf_counter()
    for model in args.models:
        sizes = grid[model]
        refs, stored = load_raw(model, sizes) if args.reuse else (None, {})
        refs = references(model, sizes, args.quick) if refs is None else refs
        saved, runs = {str(n): list(v) for n, v in refs.items()}, {}
        for method in list(C.METHODS) + (["dynesty"] if model in args.dynesty else []):
            prev = stored.get(method)
            if args.draw_only or (method not in args.methods if args.methods
                                  else prev is not None and prev["status"] == "ok"):
                runs[method] = prev or {"status": "not run (--methods / time budget)",
                                        "results": {}, "trace": None}
                continue
            runs[method] = run_method(model, method, sizes, args)
            print(f"[{model} {method}: {runs[method]['status']} after "
                  f"{time.perf_counter() - t0:.0f} s]", flush=True)
            # One file per model and method, written as soon as the method is done: an
            # interrupted run resumes (--reuse), and methods can run in parallel processes.
            C.OUTDIR.mkdir(parents=True, exist_ok=True)
            (C.OUTDIR / f"evidence_vs_n.{model}.{method}.json").write_text(json.dumps(
                {"sizes": sizes, "refs": saved, "run": runs[method]}, indent=1))
        store[model] = {"sizes": sizes, "refs": saved, "runs": runs}
        rows += table_rows(model, sizes, refs, runs)
    C.write_table(rows, COLUMNS, "evidence_vs_n", FORMATS)
    notes = speedups(rows)
    print("\n".join(notes))
    (C.OUTDIR / "evidence_vs_n_speedups.txt").write_text(
        "\n".join(notes + [f"command: {C.command_line()}"]) + "\n")
    C.save_figure(plot(store, args.models), "evidence_vs_n")


if __name__ == "__main__":
    main()
