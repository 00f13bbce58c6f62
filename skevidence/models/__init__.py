"""Probabilistic models in torch, written against the Model contract."""

from .base import Model
from .linear import LinearRegressionModel
from .logistic import LogisticRegressionModel

__all__ = ["Model", "LinearRegressionModel", "LogisticRegressionModel"]
