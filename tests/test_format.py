import math

import pytest

from skevidence import format_log_evidence
from skevidence._format import error_bar_decimals


@pytest.mark.parametrize("std, decimals", [
    (0.0096, 2), (0.362, 1), (0.04, 2), (3.2, 0), (250.0, 0), (0.00049, 4)])
def test_error_bar_shows_one_significant_digit(std, decimals):
    assert error_bar_decimals(std) == decimals
    assert float(f"{std:.{decimals}f}") != 0
    # and no more decimals than that need
    assert decimals == 0 or float(f"{std:.{decimals - 1}f}") == 0


def test_estimate_rounded_to_the_error_bars_place():
    assert format_log_evidence(-2422.1093, 0.0096) == "-2422.11 ± 0.01"
    assert format_log_evidence(-2508.616, 0.362) == "-2508.6 ± 0.4"
    assert format_log_evidence(-10.0, 3.2) == "-10 ± 3"


@pytest.mark.parametrize("std", [0.0, math.nan, math.inf])
def test_error_bar_without_digits_falls_back_to_two_decimals(std):
    assert format_log_evidence(-1.234, std) == f"-1.23 ± {std:.2f}"
