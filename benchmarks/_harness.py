"""What the benchmark scripts share: the paper's settings, the argument parser, a timed
fit, the summary of errors against a reference, the reference samplers' draws and cache."""

import argparse
import contextlib
import json
import math
import pathlib
import time
import types
import warnings

import numpy as np
import torch

# The paper's models, as explicit parameter values.
LINEAR_PAPER = {"noise_std": 1.0, "prior_std": 1.0, "intercept_prior_mean": 0.0}
GMM_PAPER = {"mean_prior": 0.0, "variance_scale": 1.0}
REFERENCES = pathlib.Path(__file__).parent / "references"


def arguments(doc):
    """An argument parser described by the first line of a script's docstring."""
    return argparse.ArgumentParser(description=doc.splitlines()[0])


@contextlib.contextmanager
def caught_warnings():
    """Record every warning (none printed); yields the list."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


@contextlib.contextmanager
def Timed():  # noqa: N802 -- read like a class: ``with Timed() as t:``
    """``with Timed() as t:`` ..., then (also after an exception) ``t.wall``, ``t.cpu``
    (seconds), ``t.warnings`` (names) and ``t.caught`` (the records)."""
    t = types.SimpleNamespace()
    with caught_warnings() as t.caught:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield t
        finally:
            t.wall, t.cpu = time.perf_counter() - wall, time.process_time() - cpu
            t.warnings = sorted({type(w.message).__name__ for w in t.caught})


def over_seeds(fit, seeds):
    """``fit(seed)`` for every seed, returning a result with ``log_evidence`` and
    ``log_evidence_std``: arrays of the estimates, their stds and the CPU seconds."""
    rows = []
    for seed in seeds:
        with Timed() as timed:
            result = fit(seed)
        rows.append((result.log_evidence, result.log_evidence_std, timed.cpu))
    return [np.array(column) for column in zip(*rows)]


def fitted(est):
    """The estimator of a fitted pipeline, or ``est`` itself."""
    return est[-1] if hasattr(est, "steps") else est


def error_summary(errors, stds):
    """Errors against a reference, with their reported stds: the share within 1 and
    2 std, the RMS, mean std over RMS, the mean, the median magnitude and the worst."""
    errors, stds = np.asarray(errors, dtype=float), np.asarray(stds, dtype=float)
    rms = float(np.sqrt(np.mean(errors**2)))
    return dict(cov1=np.mean(np.abs(errors) <= stds), cov2=np.mean(np.abs(errors) <= 2 * stds),
                rms=rms, ratio=stds.mean() / rms, bias=errors.mean(),
                median_abs=np.median(np.abs(errors)), worst=errors[np.argmax(np.abs(errors))])


def chi2(n, nu, generator):
    """``n`` chi-square(``nu``) draws as sums of squared normals (integer ``nu``), so
    that a torch generator alone reproduces a reference."""
    return (torch.randn(n, int(nu), generator=generator, dtype=torch.float64) ** 2).sum(1)


def t_log_norm(d, nu):
    """The log normaliser of a standard ``d``-variate t with ``nu`` degrees of freedom."""
    return math.lgamma((nu + d) / 2) - math.lgamma(nu / 2) - 0.5 * d * math.log(nu * math.pi)


def cached(name, key, compute, recompute=False):
    """``compute()``, kept under ``key`` in ``references/name`` (JSON) once computed."""
    path = REFERENCES / name
    cache = json.loads(path.read_text()) if path.exists() else {}
    if key not in cache or recompute:
        cache[key] = compute()
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(dict(sorted(cache.items())), indent=1) + "\n")
    return cache[key]
