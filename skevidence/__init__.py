"""skevidence: Bayesian evidence for scikit-learn models, online, by SGAIS."""

from .linear_model import EvidenceLinearRegression, EvidenceLogisticRegression

__version__ = "0.1.0"

__all__ = ["EvidenceLinearRegression", "EvidenceLogisticRegression", "__version__"]
