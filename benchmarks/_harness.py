"""What the benchmark scripts share: the paper's settings, the argument parser, a timed fit."""

import argparse
import contextlib
import time
import warnings

import numpy as np

# The paper's models, as explicit parameter values.
LINEAR_PAPER = {"noise_std": 1.0, "prior_std": 1.0, "intercept_prior_mean": 0.0}
GMM_PAPER = {"mean_prior": 0.0, "variance_scale": 1.0}


def arguments(doc):
    """An argument parser described by the first line of a script's docstring."""
    return argparse.ArgumentParser(description=doc.splitlines()[0])


@contextlib.contextmanager
def caught_warnings():
    """Record every warning (none printed); yields the list."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


class Timed:
    """``with Timed() as t:`` ..., then ``t.wall``, ``t.cpu`` (seconds), ``t.warnings`` (names)."""

    def __enter__(self):
        self._caught = caught_warnings()
        self._list = self._caught.__enter__()
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu
        self._caught.__exit__(*exc)
        self.warnings = sorted({type(w.message).__name__ for w in self._list})
        return False


def over_seeds(fit, seeds):
    """``fit(seed)`` for every seed, returning a result with ``log_evidence`` and
    ``log_evidence_std``: arrays of the estimates, their stds and the CPU seconds."""
    rows = []
    for seed in seeds:
        with Timed() as timed:
            result = fit(seed)
        rows.append((result.log_evidence, result.log_evidence_std, timed.cpu))
    return [np.array(column) for column in zip(*rows)]
