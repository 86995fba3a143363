"""`Discretization`: numbers to bucket ids by ranges, with Keras 3's boundary convention, output modes and
`adapt`. A host layer (`layers/host_layer.py`): it runs on NumPy, in the data pipeline, on arrays before
`fit`, or in front of a model on its `Input` (`layers/host_prefix.py`).

Bucketing is TensorFlow's `Bucketize`, which Keras 3 calls: the boundaries are float32, inputs are
compared as float32 (Keras casts float inputs to float32; integers convert to float in the comparison),
and a value goes to the number of boundaries <= it, so a value equal to a boundary is in the bin to its
right; NaN goes to the last bin.

`adapt` computes the boundaries as Keras 3.15 does, with the same approximate quantile summary: a
summary is two float32 rows (values, weights). Each batch is sorted and sampled every
``max(n * epsilon, 1)`` values (each sample weighing that step); the batch's summary is merged with the
running one (concatenated, the new first, and ordered by value), and a summary with at least
``1 / epsilon`` entries is compressed to the values at the cumulative-weight fractions epsilon, 2 epsilon,
... (linear interpolation). The boundaries are the summary compressed to fractions of ``1 / num_bins``,
the last one dropped. Data are read as Keras reads them: an array in one batch; a list, a tuple, a
dataset or a generator batch by batch.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import ArgumentError, DataError
from flexflow_keras.layers import bin_encoding
from flexflow_keras.layers.host_layer import HostLayer, as_host_array, iterate_adapt_data

OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count")


# --- the quantile summary (Keras 3.15's algorithm) -----------------------------------------------------
def batch_summary(values: np.ndarray, epsilon: float) -> np.ndarray:
    """The (2, k) summary of one batch: every step-th sorted value, each weighing step."""
    ordered = np.sort(np.reshape(values, [-1]))
    step = max(np.size(ordered) / (1.0 / epsilon), 1)
    picked = ordered[int(step - 1)::int(step)]
    return np.stack([picked, np.ones_like(picked) * step])


def compress(summary: np.ndarray, epsilon: float) -> np.ndarray:
    """`summary` reduced to the values at cumulative-weight fractions epsilon, 2 epsilon, ... (float32);
    a summary shorter than 1 / epsilon is kept as it is."""
    if summary.shape[1] * epsilon < 1:
        return summary
    fractions = epsilon + np.arange(0.0, 1.0, epsilon)
    cumulative = summary[1].cumsum()
    at = cumulative / cumulative[-1]
    values = np.interp(fractions, at, summary[0])
    weights_to = np.interp(fractions, at, cumulative)
    weights = weights_to - np.concatenate((np.array([0]), weights_to[:-1]))
    return np.stack((values, weights)).astype("float32")


def merge(new: np.ndarray, running: np.ndarray, epsilon: float) -> np.ndarray:
    both = np.concatenate((new, running), axis=1)
    return compress(np.take(both, np.argsort(both[0]), axis=1), epsilon)


def boundaries_from(summary: np.ndarray, num_bins: int) -> list:
    return compress(summary, 1.0 / num_bins)[0, :-1].tolist()


class Discretization(HostLayer):
    """Bucket numbers by ranges (Keras 3's `keras.layers.Discretization`).

    Args:
        bin_boundaries: sorted boundaries; bins are (-inf, b0), [b0, b1), ..., [b_last, inf).
        num_bins: the number of bins `adapt` computes boundaries for (instead of bin_boundaries).
        epsilon: the quantile summary's error tolerance (smaller: closer quantiles, more memory).
        output_mode: "int" (bucket ids, int32), "one_hot", "multi_hot" or "count" (float32 by default).
        sparse: must stay False (flexflow_keras has no sparse tensors).
        dtype: the dtype of the non-int outputs.

    Example:
        >>> keras.layers.Discretization(bin_boundaries=[0.0, 1.0, 2.0])(np.array([[-1.5, 1.0, 3.4, 0.5]]))
        # [[0, 2, 3, 1]]
    """

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int", sparse=False,
                 dtype=None, name=None):
        super().__init__(name=name, dtype=dtype)
        who = f"Discretization '{self.name}'"
        if sparse:
            raise ArgumentError(f"{who}: sparse=True is not supported (flexflow_keras has no sparse tensors; Keras "
                                f"also refuses it with output_mode='int'); leave sparse=False for a dense output.")
        if output_mode not in OUTPUT_MODES:
            raise ArgumentError(f"{who}: output_mode must be one of {OUTPUT_MODES}, received "
                                f"output_mode={output_mode!r}.")
        if num_bins is not None and num_bins < 0:
            raise ArgumentError(f"{who}: num_bins must be greater than or equal to 0, received num_bins={num_bins}.")
        if num_bins is not None and bin_boundaries is not None:
            raise ArgumentError(f"{who}: give either num_bins (and call adapt) or bin_boundaries, not both; "
                                f"received num_bins={num_bins} and bin_boundaries={bin_boundaries}.")
        if num_bins is None and bin_boundaries is None:
            raise ArgumentError(f"{who}: give num_bins (and call adapt) or bin_boundaries; received neither.")
        if isinstance(bin_boundaries, np.ndarray):
            bin_boundaries = bin_boundaries.tolist()
        if bin_boundaries is not None:
            edges = np.asarray(bin_boundaries)
            if edges.ndim != 1 or edges.dtype.kind not in "iuf" or np.any(edges[1:] < edges[:-1]):
                raise ArgumentError(f"{who}: bin_boundaries must be a sorted list of numbers (TensorFlow's Bucketize "
                                    f"refuses others), received bin_boundaries={bin_boundaries!r}.")
        self.bin_boundaries = bin_boundaries
        self.num_bins = num_bins
        self.epsilon = epsilon
        self.output_mode = output_mode
        self.sparse = False
        self.summary = None if bin_boundaries else np.array([[], []], dtype="float32")

    # --- adapt ----------------------------------------------------------------------------------------------
    def adapt(self, data, steps=None) -> None:
        """Compute the boundaries of num_bins bins from the quantiles of `data` (an array, or a list, a
        dataset or a generator of batches)."""
        who = f"Discretization '{self.name}'.adapt"
        if self.num_bins is None:
            raise ArgumentError(f"{who}: this layer was made with bin_boundaries; adapt needs num_bins instead "
                                f"(Discretization(num_bins=...)).")
        if self.num_bins == 0:
            raise ArgumentError(f"{who}: num_bins=0 has no boundaries to compute (Keras divides by zero); give "
                                f"num_bins >= 1.")
        if isinstance(data, (list, tuple)):  # Keras iterates any non-array: each element is a batch
            batches = data if steps is None else list(data)[:int(steps)]
        else:
            batches = iterate_adapt_data(data, self, steps)
        self.summary = np.array([[], []], dtype="float32")
        for batch in batches:
            values = np.asarray(as_host_array(batch, self))
            if values.dtype.kind not in "iufb":
                raise DataError(f"{who} learns from numbers; received a batch of {values.dtype}.")
            self.summary = merge(batch_summary(values.astype("float32"), self.epsilon), self.summary, self.epsilon)
        self.bin_boundaries = boundaries_from(self.summary, self.num_bins)

    # --- calls ----------------------------------------------------------------------------------------------
    def _depth(self):
        return len(self.bin_boundaries) + 1 if self.bin_boundaries is not None else self.num_bins

    def host_call(self, inputs):
        if self.bin_boundaries is None:
            raise DataError(f"Discretization '{self.name}' has no boundaries yet: pass bin_boundaries when making it "
                            f"or call adapt(data) before using it.")
        values = as_host_array(inputs, self)
        if values.dtype.kind not in "iufb":
            raise DataError(f"Discretization '{self.name}' buckets numbers; received an array of {values.dtype}.")
        edges = np.asarray(self.bin_boundaries, np.float32)
        ids = np.searchsorted(edges, values.astype(np.float32), side="right")
        return bin_encoding.encode(ids, self.output_mode, self._depth(), self.output_dtype())

    def compute_output_shape(self, input_shape):
        return bin_encoding.encoded_shape(tuple(input_shape), self.output_mode, self._depth())

    def output_dtype(self) -> str:
        return "int32" if self.output_mode == "int" else self._dtype

    def get_config(self) -> dict:
        return {"bin_boundaries": self.bin_boundaries, "num_bins": self.num_bins, "epsilon": self.epsilon,
                "output_mode": self.output_mode, "sparse": self.sparse, "name": self.name, "dtype": self._dtype}

    @classmethod
    def from_config(cls, config: dict):
        """A config saved after `adapt` holds both num_bins and bin_boundaries: the boundaries are set after."""
        config = dict(config)
        boundaries = config.pop("bin_boundaries", None) if config.get("num_bins") is not None else None
        layer = cls(**config)
        if boundaries is not None:
            layer.bin_boundaries = list(boundaries)
        return layer
