"""Training data: sources (`ArraySource`, `NpzSource` for one .npz, `SyntheticSource`), the `Batcher` that
orders and assembles batches, `validation_split`, and the checks (`check_finite`, `check_labels`). The
``-d`` formats and their detector are in `flexflow_keras.data.formats`."""

from __future__ import annotations

from flexflow_keras.data.batcher import Batch, Batcher, gather_rows
from flexflow_keras.data.checks import check_finite, check_labels
from flexflow_keras.data.sources import ArraySource, NpzSource, SyntheticSource, validation_split

__all__ = ["ArraySource", "NpzSource", "SyntheticSource", "Batcher", "Batch", "gather_rows", "validation_split",
           "check_finite", "check_labels"]
