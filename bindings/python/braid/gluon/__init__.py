"""MXNet's Gluon over braid: Parameter, Block and HybridBlock (hybridize runs a block as braid graphs),
the layers of gluon.nn, Trainer (braid's data-parallel trainer), loss.SoftmaxCrossEntropyLoss and
utils.split_and_load."""
from . import loss, nn, utils
from .block import Block, HybridBlock, SymbolBlock
from .parameter import DeferredInitializationError, Parameter, ParameterDict
from .trainer import Trainer

__all__ = ["loss", "nn", "utils", "Block", "HybridBlock", "SymbolBlock", "Parameter", "ParameterDict", "Trainer",
           "DeferredInitializationError"]
