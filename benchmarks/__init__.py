"""The benchmarks behind the results page (docs/benchmarks.rst): ``python -m benchmarks NAME``."""
