"""gluon.loss: the losses of MXNet 1.x's and 2's Gluon the chapter and the book use: softmax cross-entropy,
L2, L1 and sigmoid binary cross-entropy. Each gives one loss per sample (the mean over every axis but the
batch axis), times `weight` and the optional sample_weight."""
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


def _per_sample(loss, weight, sample_weight, batch_axis):
    if sample_weight is not None:
        loss = loss * sample_weight
    if weight is not None and weight != 1:
        loss = loss * weight
    axes = tuple(d for d in range(loss.ndim) if d != batch_axis)
    return loss.mean(axis=axes) if axes else loss


def _check(name, pred, label):
    if not isinstance(pred, ndarray) or not isinstance(label, ndarray):
        raise TypeError(f"braid: {name} takes braid arrays")
    if label.size != pred.size:
        raise ValueError(f"braid: {name}: {label.size} labels for {pred.size} predictions ({label.shape} vs "
                         f"{pred.shape})")
    return label.reshape(pred.shape) if label.shape != pred.shape else label


class L2Loss:
    """weight / 2 * (pred - label)^2, label reshaped to pred's shape."""

    def __init__(self, weight=1.0, batch_axis=0):
        self._weight, self._batch_axis = weight, batch_axis

    def __call__(self, pred, label, sample_weight=None):
        label = _check("L2Loss", pred, label)
        diff = pred - label
        return _per_sample(diff * diff, self._weight / 2, sample_weight, self._batch_axis)


class L1Loss:
    """weight * |pred - label|."""

    def __init__(self, weight=None, batch_axis=0):
        self._weight, self._batch_axis = weight, batch_axis

    def __call__(self, pred, label, sample_weight=None):
        label = _check("L1Loss", pred, label)
        return _per_sample(np.abs(pred - label), self._weight, sample_weight, self._batch_axis)


class SigmoidBinaryCrossEntropyLoss:
    """-(y log p + (1 - y) log(1 - p)) with p = sigmoid(pred); from logits in the stable form
    max(x, 0) - x y + log(1 + exp(-|x|)), or from probabilities with from_sigmoid=True."""

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0):
        self._from_sigmoid, self._weight, self._batch_axis = from_sigmoid, weight, batch_axis

    def __call__(self, pred, label, sample_weight=None):
        label = _check("SigmoidBinaryCrossEntropyLoss", pred, label)
        if not self._from_sigmoid:
            loss = np.maximum(pred, 0.0) - pred * label + np.log(np.exp(-np.abs(pred)) + 1.0)
        else:
            eps = 1e-12
            loss = -(np.log(pred + eps) * label + np.log(1.0 - pred + eps) * (1.0 - label))
        return _per_sample(loss, self._weight, sample_weight, self._batch_axis)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss
