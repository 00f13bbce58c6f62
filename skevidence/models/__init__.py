"""Probabilistic models in torch, written against the Model contract."""

from .base import Model
from .linear import LinearRegressionModel

__all__ = ["Model", "LinearRegressionModel"]
