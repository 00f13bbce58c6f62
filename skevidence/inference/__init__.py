"""Inference algorithms in torch; they know only the Model contract."""

from . import ais, nested, online_nested, sequential, sequential_nested, sgais, smc
from .engine import Engine
from .sgais import SGAISConfig, SGAISState, init, update

__all__ = ["ENGINES", "Engine", "SGAISConfig", "SGAISState", "init", "update"]

# The evidence engines behind the estimators' ``method=``, by method name
# (the contract is in :mod:`.engine`).
ENGINES = {module.ENGINE.name: module.ENGINE
           for module in (sgais, ais, smc, nested, sequential, sequential_nested, online_nested)}
