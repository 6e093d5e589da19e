"""gluon.data: datasets and the DataLoader that batches them (MXNet's names), and gluon.data.vision."""
from . import vision
from .dataloader import DataLoader
from .dataset import ArrayDataset, Dataset, SimpleDataset

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "DataLoader", "vision"]
