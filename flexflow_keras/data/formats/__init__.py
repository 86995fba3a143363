"""Dataset formats for ``-d``: `detect` says which format a path holds, `open_dataset` reads it into a
`DatasetFile` (train/test arrays, format name, class count), and `flag_source` shapes it for a model.
Formats: .npz, .npy pairs, CSV with a label column, MNIST IDX files, CIFAR-10/100 python batches (one
module each), and folders of class sub-folders of images (recognised here, read by data/images.py).
"""

from __future__ import annotations

from flexflow_keras.data.formats.base import ACCEPTED, DatasetFile, describe_path
from flexflow_keras.data.formats.detect import Detection, detect, open_dataset
from flexflow_keras.data.formats.for_model import flag_source
from flexflow_keras.data.images import is_image_folder

__all__ = ["ACCEPTED", "DatasetFile", "Detection", "describe_path", "detect", "flag_source", "is_image_folder",
           "open_dataset"]
