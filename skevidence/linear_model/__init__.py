"""Linear models with an online evidence: EvidenceLinearRegression and
EvidenceLogisticRegression."""

from ._linear import EvidenceLinearRegression
from ._logistic import EvidenceLogisticRegression

__all__ = ["EvidenceLinearRegression", "EvidenceLogisticRegression"]
