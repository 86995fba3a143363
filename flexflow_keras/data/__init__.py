"""Training data: sources (`ArraySource`, `NpzSource` for one .npz, `SyntheticSource`, `ImageFolderSource`
for a ``-d`` folder of class sub-folders of images), the `Batcher` that orders and assembles batches,
`epoch_order` (the one per-epoch sample order), `validation_split`, the checks (`check_finite`,
`check_labels`), `image_dataset_from_directory`, and the `LoaderPipeline` that decodes lazily read sources
on the runtime's CPU processors into a zero-copy ring. The ``-d`` formats and their detector are in
`flexflow_keras.data.formats`."""

from __future__ import annotations

from flexflow_keras.data.batcher import Batch, Batcher, gather_rows
from flexflow_keras.data.checks import check_finite, check_labels
from flexflow_keras.data.dataset import ImageDataset, image_dataset_from_directory
from flexflow_keras.data.images import ImageFolderSource, is_image_folder, open_image_folder
from flexflow_keras.data.order import epoch_order
from flexflow_keras.data.pipeline import BatchRing, LoaderPipeline
from flexflow_keras.data.sources import ArraySource, NpzSource, SyntheticSource, validation_split

__all__ = ["ArraySource", "NpzSource", "SyntheticSource", "Batcher", "Batch", "gather_rows", "validation_split",
           "check_finite", "check_labels", "ImageFolderSource", "is_image_folder", "open_image_folder", "ImageDataset",
           "image_dataset_from_directory", "epoch_order", "BatchRing", "LoaderPipeline"]
