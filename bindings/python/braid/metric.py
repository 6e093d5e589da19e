"""MXNet 1.x's mx.metric: the running evaluation metrics of training loops (Accuracy)."""
import numpy as _numpy

from .ndarray import ndarray

__all__ = ["EvalMetric", "Accuracy", "create"]


def _host(x):
    return x.asnumpy() if isinstance(x, ndarray) else _numpy.asarray(x)


class EvalMetric:
    """A metric summed over the batches given to update() since the last reset()."""

    def __init__(self, name):
        self.name = name
        self.reset()

    def reset(self):
        self.num_inst, self.sum_metric = 0, 0.0

    def get(self):
        """(name, value); value is NaN before any update, as MXNet gives it."""
        return self.name, (self.sum_metric / self.num_inst if self.num_inst else float("nan"))

    def get_name_value(self):
        return [self.get()]


class Accuracy(EvalMetric):
    """The fraction of samples whose predicted class (the argmax over `axis` of the predictions, or the
    predictions themselves when they are already class indices) equals the label."""

    def __init__(self, axis=1, name="accuracy"):
        self.axis = axis
        super().__init__(name)

    def update(self, labels, preds):
        labels = labels if isinstance(labels, (list, tuple)) else [labels]
        preds = preds if isinstance(preds, (list, tuple)) else [preds]
        if len(labels) != len(preds):
            raise ValueError(f"braid: Accuracy.update got {len(labels)} label arrays and {len(preds)} predictions")
        for label, pred in zip(labels, preds):
            p, y = _host(pred), _host(label)
            if p.ndim > y.ndim:
                p = p.argmax(axis=self.axis)
            p, y = p.astype(_numpy.int64).ravel(), y.astype(_numpy.int64).ravel()
            if p.shape != y.shape:
                raise ValueError(f"braid: Accuracy.update: {p.size} predictions for {y.size} labels")
            self.sum_metric += float((p == y).sum())
            self.num_inst += y.size


def create(metric, *args, **kwargs):
    """A metric by name ("acc", "accuracy") or itself."""
    if isinstance(metric, EvalMetric):
        return metric
    if metric in ("acc", "accuracy"):
        return Accuracy(*args, **kwargs)
    raise ValueError(f"braid: no metric named {metric!r}")
