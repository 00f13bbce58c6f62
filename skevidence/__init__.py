"""skevidence: Bayesian evidence for scikit-learn models, online, by SGAIS."""

from .linear_model import EvidenceLinearRegression

__version__ = "0.1.0"

__all__ = ["EvidenceLinearRegression", "__version__"]
