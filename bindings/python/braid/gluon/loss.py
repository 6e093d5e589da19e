"""gluon.loss: the softmax cross-entropy the chapter trains with."""
from .. import np
from .._lib import lib
from ..ndarray import ndarray, new


class SoftmaxCrossEntropyLoss:
    """loss(pred, label): -log softmax(pred)[label] per sample (MXNet's default: sparse labels, the
    class axis last, from logits), times weight if one is given. Float labels are taken as class
    indices."""

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None, batch_axis=0):
        if not sparse_label or from_logits or batch_axis != 0:
            raise ValueError("braid: SoftmaxCrossEntropyLoss supports sparse labels from logits, batch axis 0")
        self._axis, self._weight = axis, weight

    def __call__(self, pred, label):
        if not isinstance(pred, ndarray) or not isinstance(label, ndarray):
            raise TypeError("braid: SoftmaxCrossEntropyLoss takes braid arrays")
        if pred.ndim != 2 or self._axis not in (-1, 1):
            raise ValueError(f"braid: SoftmaxCrossEntropyLoss takes (batch, classes) predictions, not {pred.shape}")
        if label.dtype not in (np.int32, np.int64):
            label = label.astype(np.int64)
        label = label.reshape(-1)  # held in a name: a temporary's handle would be released before the call
        loss = new(lib.braid_softmax_cross_entropy, pred.handle, label.handle)
        return loss if self._weight is None else loss * self._weight
