"""Probabilistic models in torch, written against the Model contract."""

from .base import Model
from .gmm import GaussianMixtureModel
from .linear import LinearRegressionModel
from .logistic import LogisticRegressionModel

__all__ = [
    "Model",
    "GaussianMixtureModel",
    "LinearRegressionModel",
    "LogisticRegressionModel",
]
