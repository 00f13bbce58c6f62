"""The profiling benchmark still fits the engine it wraps (it patches its functions by name)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
import bench_large_n  # noqa: E402


def test_the_large_n_parts_are_timed():
    est, data, kwargs, _ = bench_large_n.setup("gmm", 1000)
    parts = []
    cpu, _, ends = bench_large_n.stream(est, data, kwargs, n_blocks=2, parts=parts)
    assert ends[-1] == 1000 and len(parts) == len(cpu) == 2  # (500-row calls)
    # The first block's warm-up moves are exact: the wrapper saw them.
    assert parts[0]["warm-up"] > 0
    bench_large_n.print_parts(cpu, ends, parts)
