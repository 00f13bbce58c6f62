"""Inference algorithms in torch; they know only the Model contract."""

from .sgais import SGAISConfig, SGAISState, init, update

__all__ = ["SGAISConfig", "SGAISState", "init", "update"]
