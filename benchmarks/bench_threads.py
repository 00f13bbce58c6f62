"""Fit time under thread contention: skevidence's scoped thread count against torch's default.

Every measurement runs in a fresh Python process (so torch starts with its
own default thread count, one per core, unless told otherwise), with and
without a competitor: a separate process that keeps one core busy (a Python
busy loop), as a second fit, a browser or a CI job would. Settings:

* ``pinned``: ``torch.set_num_threads(1)`` before the fit (the baseline);
* ``default``: nothing set, so skevidence's default applies (the fit runs
  with one torch thread, restored afterwards; ``skevidence.set_config``);
* ``unscoped``: ``skevidence.set_config(n_threads=None)``, torch's default
  thread count inside the fit: the library's behaviour before the scoping.

Cases: ``EvidenceLinearRegression`` at N = 1e4, ``EvidenceLogisticRegression``
at N = 1e3 (paper data), and ``EvidenceSearch`` over two linear-regression
candidates (N = 5e3) with ``n_jobs=2`` under joblib's threading backend.
A run past its time limit is reported as ``>limit``.

    python benchmarks/bench_threads.py
    python benchmarks/bench_threads.py --cases linreg --unscoped-timeout 60

Columns: case, competitor, seconds per setting, and default / pinned (the
bar: at most 2 with a competitor).
"""

import argparse
import os
import subprocess
import sys
import time

CASES = {
    "linreg": """
from skevidence import EvidenceLinearRegression
from skevidence.datasets import make_linear_regression
X, y = make_linear_regression(10_000, random_state=0)
est = EvidenceLinearRegression(random_state=0)
run = lambda: est.fit(X, y)
""",
    "logistic": """
from skevidence import EvidenceLogisticRegression
from skevidence.datasets import make_logistic_regression
X, y = make_logistic_regression(1000, random_state=1)
est = EvidenceLogisticRegression(random_state=0)
run = lambda: est.fit(X, y)
""",
    "search-threads": """
from joblib import parallel_backend
from skevidence import EvidenceLinearRegression, EvidenceSearch
from skevidence.datasets import make_linear_regression
X, y = make_linear_regression(5000, random_state=0)
search = EvidenceSearch(EvidenceLinearRegression(random_state=0),
                        {"prior_std": [1.0, 3.0]}, n_jobs=2)
def run():
    with parallel_backend("threading", n_jobs=2):
        search.fit(X, y)
""",
}

SETTINGS = {
    "pinned": "import torch; torch.set_num_threads(1)",
    "default": "",
    "unscoped": "import skevidence; skevidence.set_config(n_threads=None)",
}

TEMPLATE = """
import time
{setting}
{case}
t = time.perf_counter()
run()
print(time.perf_counter() - t)
"""

# A busy loop that ends by itself when the benchmark does (its parent changes).
COMPETITOR = "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"


def clean_env():
    """The environment of a user who set no thread variables."""
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                 "SKEVIDENCE_NUM_THREADS"):
        env.pop(name, None)
    return env


def time_fit(case, setting, timeout):
    """Seconds of one fit in a fresh process; inf past ``timeout``."""
    code = TEMPLATE.format(setting=SETTINGS[setting], case=CASES[case])
    try:
        out = subprocess.run([sys.executable, "-c", code], env=clean_env(), timeout=timeout,
                             capture_output=True, text=True, check=True)
    except subprocess.TimeoutExpired:
        return float("inf")
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(exc.stderr) from exc
    return float(out.stdout.strip().splitlines()[-1])


def fmt(seconds, timeout):
    return f">{timeout:.0f}" if seconds == float("inf") else f"{seconds:.2f}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds before a pinned or default fit is abandoned")
    parser.add_argument("--unscoped-timeout", type=float, default=90.0,
                        help="the same for the unscoped setting, which can stall")
    args = parser.parse_args()
    limit = {s: args.unscoped_timeout if s == "unscoped" else args.timeout
             for s in args.settings}
    print(f"{os.cpu_count()} CPU cores; competitor: one busy Python process")
    print(f"{'case':>15} | {'competitor':>10} | "
          + " | ".join(f"{s:>9}" for s in args.settings) + " | default/pinned")
    for case in args.cases:
        for busy in (False, True):
            competitor = (subprocess.Popen([sys.executable, "-c", COMPETITOR])
                          if busy else None)
            try:
                time.sleep(0.5 if busy else 0.0)
                times = {s: time_fit(case, s, limit[s]) for s in args.settings}
            finally:
                if competitor is not None:
                    competitor.kill()
                    competitor.wait()
            ratio = (times["default"] / times["pinned"]
                     if {"default", "pinned"} <= times.keys() else float("nan"))
            cells = " | ".join(f"{fmt(times[s], limit[s]):>9}" for s in args.settings)
            print(f"{case:>15} | {'yes' if busy else 'no':>10} | {cells} | {ratio:.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
