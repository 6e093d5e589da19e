"""gluon.nn: the layers the chapter's models use (Dense, Conv2D, pooling, BatchNorm, Dropout, Flatten,
Activation) and the containers (Sequential, HybridSequential)."""
from ..block import Block, HybridBlock, HybridSequential, Sequential
from .layers import (Activation, AvgPool2D, BatchNorm, Conv2D, Dense, Dropout, Flatten, GlobalAvgPool2D,
                     GlobalMaxPool2D, MaxPool2D)

__all__ = ["Block", "HybridBlock", "Sequential", "HybridSequential", "Dense", "Conv2D", "MaxPool2D", "AvgPool2D",
           "GlobalAvgPool2D", "GlobalMaxPool2D", "BatchNorm", "Dropout", "Flatten", "Activation"]
