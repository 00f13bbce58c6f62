"""skevidence: Bayesian evidence for scikit-learn models, online, by SGAIS."""

from .linear_model import EvidenceLinearRegression, EvidenceLogisticRegression
from .mixture import EvidenceGMM

__version__ = "0.1.0"

__all__ = [
    "EvidenceGMM",
    "EvidenceLinearRegression",
    "EvidenceLogisticRegression",
    "__version__",
]
