"""Regenerate a table of the results page: ``python -m benchmarks NAME``.

``--list`` names the tables, ``all`` runs every one. Each run is a fresh process of a
script here, with ``OMP_NUM_THREADS=1`` unless set, stopped at the table's time cap
(``--time-cap`` overrides); arguments after ``--`` go after the table's own (a later
option overrides an earlier one): ``python -m benchmarks linreg -- --sizes 1e3``.
"""

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (module, argv or list of argvs (one process each), time cap in seconds); an
# argv that starts with "other_module:" runs that module instead.
REGISTRY = {
    "peers": ("bench_peers", [
        "--peers pymc --models linear logistic --sizes 1e3 1e4 --time-cap 600",
        "--peers pymc --models linear --sizes 1e5 --time-cap 480",
        "--peers pymc --models gmm --sizes 1e3 1e4 --time-cap 700"], 7200),
    "gpu": ("bench_gpu", [
        "--no-cpu --dtypes float32 --particles 4096 --models logistic gmm "
        "--logistic-n 10000 100000 --gmm-n 20000 100000",
        "--no-cpu --dtypes float32 --particles 8192 --models logistic --logistic-n 1000000",
        "--device cpu --dtypes float64 --particles 128 --models logistic gmm"], 1800),
    "linreg": ("bench_linreg", "--seeds 5", 900),
    "real-data": ("bench_real_data", "--seeds 3", 5400),
    "many-parameters": ("bench_highdim", [
        "--data paper synth100 --particles 32", "--data digits3",
        "--data digits --splits 0 1 2 --no-reference",
        "bench_loops:--table diabetes-pairwise"], 3600),
    "calibration": ("bench_calibration", [
        "", "--models gmm1 gmm3ref", "--models gmm3ref --runs 20"], 7200),
    "methods": ("bench_methods", "--seeds 0 1 2", 1200),
    "long-streams": ("bench_logistic_stream", [
        "--n 1e6 --at 1e4 1e5 --data-seed 1 --fit --sampler-seeds 0 1 2 3 4 5",
        "--n 1e6 --at 1e4 1e5 --data-seed 2 --fit --sampler-seeds 0 1 2 3 4 5"], 3600),
    "importance-check": ("bench_logistic_stream", [
        "--n 1e6 --at 1e4 1e5 --data-seed 1 --fit --sampler-seeds 0 1 2",
        "--n 1e6 --at 1e4 1e5 --data-seed 2 --fit --sampler-seeds 0 1 2"], 1800),
    "three-clusters": ("bench_gmm_reference", [
        "--n 4000 --seeds 0 1 2 3", "--n 20000 --seeds 0 1 2 3 4",
        "--n 100000 --seeds 0 1 2 3"], 7200),
    "mixture-sweep": ("bench_mixture_sweep", [
        "--n 10000 --time-cap 3000", "--n 10000 --held-out --time-cap 3000",
        "--n 100000 --time-cap 6000", "--bundled --time-cap 1800"], 14400),
    "gp-classifier": ("bench_user_models", "--model gp", 600),
    "rbm-partition": ("bench_user_models", "--model rbm", 600),
    "arviz-draws": ("bench_arviz", "--particles 128 1024 4096", 1800),
    # The tables that a loop over fit measured.
    "mixture-1e5": ("bench_loops", "--table mixture-1e5", 3600),
    "mixture-scale-bias": ("bench_loops", "--table mixture-scale-bias", 3600),
    # The outputs of docs/paper.rst (figures and tables written to docs/paper/).
    "paper-evidence-vs-n": ("paper/evidence_vs_n", "--quick --dynesty linear", 14400),
    "paper-distribution-shift": ("paper/distribution_shift", "--quick", 3600),
    "paper-sensitivity": ("paper/sensitivity", "--quick", 7200),
}


def runs_of(name, extra=None):
    """The table's runs as (module, argv) pairs, and its time cap."""
    module, argvs, cap = REGISTRY[name]
    splits = [argv.rpartition(":") for argv in ([argvs] if isinstance(argvs, str) else argvs)]
    return [(own or module, rest.split() + list(extra or [])) for own, _, rest in splits], cap


def command(module, argv):
    return " ".join(["python", f"benchmarks/{module}.py", *argv])


def run(name, extra=None, time_cap=None):
    """Run one table's scripts, each in its own process under the table's cap."""
    runs, cap = runs_of(name, extra)
    cap = cap if time_cap is None else time_cap
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.setdefault("OMP_NUM_THREADS", "1")
    start = time.perf_counter()
    for module, argv in runs:
        left = cap - (time.perf_counter() - start)
        print(f"== {name}: {command(module, argv)} (cap {left:.0f} s)", flush=True)
        if left <= 0:
            print(f"== {name}: time cap of {cap:.0f} s reached, not run", flush=True)
            continue
        proc = subprocess.Popen([sys.executable, os.path.join(HERE, module + ".py"), *argv],
                                env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            print(f"== {name}: stopped at the time cap of {cap:.0f} s", flush=True)
            return 124
        if rc:
            print(f"== {name}: exit status {rc}", flush=True)
            return rc
    print(f"== {name}: {time.perf_counter() - start:.0f} s", flush=True)
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    extra = None
    if "--" in argv:
        extra, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("name", nargs="?", choices=[*REGISTRY, "all"], help="a table, or all")
    parser.add_argument("--list", action="store_true", help="name every table and its commands")
    parser.add_argument("--time-cap", type=float, default=None,
                        help="seconds of wall time per table (default: each table's own)")
    args = parser.parse_args(argv)
    if args.list or args.name is None:
        for name in REGISTRY:
            runs, cap = runs_of(name)
            print(f"{name:<22} cap {cap:>6.0f} s  " + "\n".ljust(40).join(
                command(module, a) for module, a in runs))
        return 0
    if args.name == "all" and extra is not None:
        parser.error("arguments after -- go with one table, not all")
    names = list(REGISTRY) if args.name == "all" else [args.name]
    return max(run(name, extra, args.time_cap) for name in names)


if __name__ == "__main__":
    sys.exit(main())
