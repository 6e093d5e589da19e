"""gluon.data.vision: the Fashion-MNIST and MNIST datasets and the image transforms."""
from . import transforms
from .datasets import MNIST, FashionMNIST

__all__ = ["MNIST", "FashionMNIST", "transforms"]
