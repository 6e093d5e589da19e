"""The parts of MXNet's Gluon that the chapter's multi-device listings use: utils.split_and_load and
loss.SoftmaxCrossEntropyLoss."""
from . import loss, utils  # noqa: F401

__all__ = ["loss", "utils"]
