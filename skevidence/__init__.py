"""skevidence: Bayesian evidence for scikit-learn models, online, by SGAIS."""

from ._config import config_context, get_config, set_config
from ._export import to_inference_data
from ._format import format_log_evidence
from .ensemble import BayesianModelAverager
from .generic import EvidenceModel, EvidenceResult, log_evidence
from .linear_model import EvidenceLinearRegression, EvidenceLogisticRegression
from .mixture import EvidenceGMM
from .model_selection import EvidenceSearch

__version__ = "0.1.0"

__all__ = [
    "BayesianModelAverager",
    "EvidenceGMM",
    "EvidenceLinearRegression",
    "EvidenceLogisticRegression",
    "EvidenceModel",
    "EvidenceResult",
    "EvidenceSearch",
    "__version__",
    "config_context",
    "format_log_evidence",
    "get_config",
    "log_evidence",
    "set_config",
    "to_inference_data",
]
