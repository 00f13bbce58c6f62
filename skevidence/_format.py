"""Printing an estimate with its error bar."""

import math

# Enough for any error bar a float64 run reports; bounds the search below.
_MAX_DECIMALS = 15


def error_bar_decimals(std):
    """The fewest decimal places at which ``std`` shows a nonzero digit.

    Parameters
    ----------
    std : float
        A standard deviation.

    Returns
    -------
    int
        The decimal places; 2 when ``std`` is zero or not finite, which have
        no significant digit to show.
    """
    if not math.isfinite(std) or std <= 0:
        return 2
    for decimals in range(_MAX_DECIMALS + 1):
        if float(f"{std:.{decimals}f}") != 0:
            return decimals
    return _MAX_DECIMALS


def format_log_evidence(log_evidence, std):
    """``"estimate ± std"`` with the digits the error bar needs.

    The error bar shows at least one significant digit (``± 0.01``, never
    ``± 0.0``) and the estimate is rounded to the same decimal place: digits
    below the error bar are noise.

    Parameters
    ----------
    log_evidence : float
        The estimate, e.g. ``log_evidence_``.
    std : float
        Its Monte Carlo standard deviation, e.g. ``log_evidence_std_``.

    Returns
    -------
    str

    Examples
    --------
    >>> from skevidence import format_log_evidence
    >>> format_log_evidence(-2422.1093, 0.0096)
    '-2422.11 ± 0.01'
    >>> format_log_evidence(-2508.616, 0.362)
    '-2508.6 ± 0.4'
    """
    decimals = error_bar_decimals(std)
    return f"{log_evidence:.{decimals}f} ± {std:.{decimals}f}"
