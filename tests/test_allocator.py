"""glibc's allocator keeps the engine's freed working memory (skevidence/_allocator.py)."""

import os
import subprocess
import sys

import pytest

# Steps that allocate and free megabyte tensors, as a gradient step does:
# the minor page faults of 100 of them before and after tune_allocator()
# (in a fresh process, whose allocator nothing has tuned yet).
_STEPS = """
import resource, torch
from skevidence._allocator import tune_allocator
x = torch.ones(128, 4, 500, dtype=torch.float64)
y = torch.ones(128, 500, dtype=torch.float64)
def step():
    a = x * 2.0
    b = a.exp()
    total = b.sum(1)
    c = total.log() + y
    return float(c[0, 0])
def faults():
    for _ in range(5):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(100):
        step()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
untuned = faults()
tune_allocator()
print(untuned, faults())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux's")
def test_tuned_allocator_does_not_refault_freed_tensors():
    env = {key: value for key, value in os.environ.items()
           if key not in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_",
                          "SKEVIDENCE_MALLOC_TUNING")}
    env["PYTHONPATH"] = os.getcwd()
    out = subprocess.run([sys.executable, "-c", _STEPS], env=env, check=True,
                         capture_output=True, text=True).stdout
    untuned, tuned = map(int, out.split())
    # Untuned, glibc trims the freed megabytes and faults them in again
    # (134,300 faults in 100 steps measured, about 250 per megabyte
    # tensor); tuned, the heap keeps them (0 measured).
    assert untuned > 10_000
    assert tuned < 1000


def test_fits_and_predictions_tune_the_allocator_once():
    from skevidence import _allocator
    from skevidence._config import torch_threads

    with torch_threads():  # the scope of every fit, partial_fit and prediction
        pass
    assert _allocator._done
    _allocator.tune_allocator()  # a second call is a no-op
