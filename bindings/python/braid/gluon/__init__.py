"""MXNet's Gluon over braid: Parameter, Block and HybridBlock (hybridize runs a block as braid graphs),
the layers of gluon.nn, Trainer (braid's data-parallel trainer), the losses, utils (split_and_load,
clip_global_norm) and data (DataLoader, datasets, vision)."""
from . import data, loss, nn, utils
from .block import Block, HybridBlock, SymbolBlock
from .parameter import DeferredInitializationError, Parameter, ParameterDict
from .trainer import Trainer

__all__ = ["data", "loss", "nn", "utils", "Block", "HybridBlock", "SymbolBlock", "Parameter", "ParameterDict", "Trainer",
           "DeferredInitializationError"]
