"""Preprocessing layers that run inside the model: Rescaling, Normalization (with `adapt`) and
CategoryEncoding (Keras 3 semantics).

Rescaling and Normalization compose element-wise ops (their gradients flow through); Normalization
reads its adapted mean and variance as non-trainable weights, so `adapt` after the model was built takes
effect at the next call. CategoryEncoding is one op on integer ids, with no gradient.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from flexflow_keras import backend, ops
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.ops import functional as F
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.encoding import CategoryEncodingOp


def _scalar_or_array(value):
    if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
        return float(value)
    return np.asarray(value, dtype=np.float32)


def _config_value(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


class Rescaling(Layer):
    """``inputs * scale + offset`` (e.g. ``Rescaling(1 / 255)`` for pixels, ``Rescaling(1 / 127.5, -1)``).

    Args:
        scale: a number or an array broadcast against the inputs.
        offset: a number or an array broadcast against the inputs.
    """

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = _scalar_or_array(scale)
        self.offset = _scalar_or_array(offset)

    def call(self, inputs):
        y = ops.multiply(inputs, self.scale)
        if isinstance(self.offset, float) and self.offset == 0.0:
            return y
        return ops.add(y, self.offset)

    def get_config(self):
        return {**super().get_config(), "scale": _config_value(self.scale), "offset": _config_value(self.offset)}


class Normalization(Layer):
    """``(inputs - mean) / max(sqrt(variance), epsilon)`` per position of the kept `axis` (or the inverse
    map with `invert`); mean and variance are given or computed by `adapt(data)`.

    Args:
        axis: the axis (or axes) that keep their own statistics (-1: one mean per feature; None: one
            scalar mean and variance).
        mean, variance: the statistics, broadcast to the kept axes; both or neither.
        invert: map normalised values back: ``mean + inputs * sqrt(variance)``.

    Weights (when adapted rather than given): mean, variance and count (non-trainable), as Keras 3.

    Example:
        >>> norm = Normalization()
        >>> norm.adapt(x_train)
        >>> model = Sequential([Input((8,)), norm, Dense(1)])
    """

    supports_masking = True  # passes the input's mask on (Keras 3)

    _float_math = True

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
            axis = (int(axis),)
        elif isinstance(axis, (list, tuple)) and all(isinstance(a, (int, np.integer)) for a in axis):
            axis = tuple(int(a) for a in axis)
        else:
            raise ValueError(f"{_args.who(self)} expects axis to be an int, a tuple of ints or None, received "
                             f"axis={axis!r}.")
        self.axis = axis
        if (mean is None) != (variance is None):
            raise ValueError(f"{_args.who(self)}: set both mean and variance, or neither (and call adapt()); "
                             f"received mean={mean!r}, variance={variance!r}.")
        if mean is not None and np.shape(mean) != np.shape(variance):
            raise ValueError(f"{_args.who(self)}: mean and variance must have the same shape, received "
                             f"{np.shape(mean)} and {np.shape(variance)}.")
        if mean is not None and np.ndim(mean) > len(self.axis):
            raise ValueError(f"{_args.who(self)}: the rank of mean ({np.ndim(mean)}) must be at most the number "
                             f"of kept axes ({len(self.axis)}, axis={self.axis}).")
        self.input_mean = mean
        self.input_variance = variance
        self.invert = bool(invert)
        self.adapt_mean = self.adapt_variance = self.count = None
        self._keep = self._reduce = self._bshape = None

    def _resolve_axes(self, input_shape) -> None:
        ndim = len(input_shape)
        if any(not -ndim <= a < ndim for a in self.axis):
            raise ValueError(f"{_args.who(self)}: axis={self.axis} is out of range for inputs of rank {ndim} "
                             f"(shape {tuple(input_shape)}).")
        keep = tuple(sorted(a % ndim for a in self.axis))
        if 0 in keep:
            raise ValueError(f"{_args.who(self)} cannot keep statistics per sample (axis 0, the batch); use "
                             f"feature axes such as -1.")
        for d in keep:
            if input_shape[d] is None:
                raise ShapeError(f"{_args.who(self)} needs a known size on kept axis {d}, received input shape "
                                 f"{tuple(input_shape)}.")
        self._keep = keep
        self._reduce = tuple(d for d in range(ndim) if d not in keep)
        self._bshape = tuple(input_shape[d] if d in keep else 1 for d in range(ndim))

    def build(self, input_shape):
        self._resolve_axes(input_shape)
        if self.input_mean is None:
            shape = tuple(input_shape[d] for d in self._keep)
            self.adapt_mean = self.add_weight(name="mean", shape=shape, initializer="zeros", trainable=False)
            self.adapt_variance = self.add_weight(name="variance", shape=shape, initializer="ones",
                                                  trainable=False)
            self.count = self.add_weight(name="count", shape=(), dtype="int32", initializer="zeros",
                                         trainable=False)

    @property
    def mean(self) -> np.ndarray | None:
        """The mean in Keras 3's broadcast shape (1 on the reduced axes; `.numpy()` gives it as a plain
        array), or None before build."""
        return self._stat_value("mean")

    @property
    def variance(self) -> np.ndarray | None:
        """The variance in Keras 3's broadcast shape, or None before build."""
        return self._stat_value("variance")

    def _stat_value(self, which: str) -> np.ndarray | None:
        from flexflow_keras.ops.eager_tensor import EagerTensor

        if self._bshape is None:
            return None
        if self.input_mean is not None:
            value = self._given(self.input_mean if which == "mean" else self.input_variance)
        else:
            value = (self.adapt_mean if which == "mean" else self.adapt_variance).numpy().reshape(self._bshape)
        # an array that also answers .numpy(), as the TensorFlow tutorials' normalizer.mean.numpy() expects
        return np.asarray(value, dtype=self._dtype).view(EagerTensor)

    def _given(self, value) -> np.ndarray:
        """A given mean/variance expanded to the broadcast shape (Keras aligns it with the last kept axes)."""
        arr = np.asarray(value, dtype=np.float64)
        expanded = [1] * len(self._bshape)
        for i in range(1, arr.ndim + 1):
            expanded[self._keep[-i]] = arr.shape[-i]
        return np.broadcast_to(arr.reshape(expanded), self._bshape)

    def _stat(self, which: str, symbolic: bool):
        """The mean or variance: given ones in the broadcast shape without its leading batch 1, weights in
        their own shape (the kept dims')."""
        per_sample = self._bshape[1:]
        if self.input_mean is not None:
            value = self._given(self.input_mean if which == "mean" else self.input_variance)
            arr = np.ascontiguousarray(value.reshape(per_sample), dtype=self._dtype)
            return F.constant(arr) if symbolic else arr
        # the weight has the kept dims' shape; it broadcasts against inputs whose kept axes come last (call()
        # moves them there), so it is used as it is: a reshape would treat its first dim as a batch
        return F._tensor(self.adapt_mean if which == "mean" else self.adapt_variance, symbolic)

    def _kept_last(self) -> tuple[int, ...] | None:
        """The permutation that moves the kept axes to the end (in order), or None when they are there."""
        ndim = len(self._bshape)
        if self.input_mean is not None or self._keep == tuple(range(ndim - len(self._keep), ndim)):
            return None
        return tuple(self._reduce) + tuple(self._keep)

    def call(self, inputs):
        symbolic = F._symbolic(inputs)
        perm = self._kept_last()
        if perm is not None:
            inputs = ops.transpose(inputs, perm)
        mean, variance = self._stat("mean", symbolic), self._stat("variance", symbolic)
        denom = ops.maximum(ops.sqrt(variance), backend.epsilon())
        if self.invert:
            out = ops.add(mean, ops.multiply(inputs, denom))
        else:
            out = ops.divide(ops.subtract(inputs, mean), denom)
        return out if perm is None else ops.transpose(out, tuple(int(i) for i in np.argsort(perm)))

    # --- adapt --------------------------------------------------------------------------------------------
    def adapt(self, data, batch_size=None, steps=None):
        """Compute the mean and variance of `data` over the non-kept axes (in float64).

        Args:
            data: a NumPy array (or array-like), a `tf.data.Dataset` or any iterable of batches (arrays, or
                (x, y) tuples whose x is taken), e.g. a generator or a list of arrays.
            batch_size: accepted for Keras 2 compatibility (an array is reduced at once).
            steps: the number of batches to read from an iterable (None: all).

        Raises:
            ValueError: when the layer was given mean and variance, or a batch's kept dims differ.
        """
        if self.input_mean is not None:
            raise ValueError(f"{_args.who(self)} was given mean and variance; adapt() cannot change them. Create "
                             f"the layer without mean/variance to adapt it.")
        batches = _batches(data, self)
        if steps is not None:
            batches = itertools.islice(batches, int(steps))
        total_mean = total_var = None
        total = 0
        for batch in batches:
            x = np.asarray(batch, dtype=np.float64)
            if not self.built:
                self.build((None,) + x.shape[1:])
                self.built = True
            if x.ndim != len(self._bshape) or any(x.shape[d] != self._bshape[d] for d in self._keep):
                raise ValueError(f"{_args.who(self)}.adapt() received a batch of shape {x.shape}; the layer "
                                 f"expects rank {len(self._bshape)} with sizes {[self._bshape[d] for d in self._keep]} "
                                 f"on the kept axes {self._keep}.")
            n = math.prod(x.shape[d] for d in self._reduce) if self._reduce else 1
            if n == 0:
                continue
            mean, var = x.mean(axis=self._reduce), x.var(axis=self._reduce)
            if total_mean is None:
                total_mean, total_var, total = mean, var, n
                continue
            # Chan et al.'s pairwise update of the mean and the (population) variance
            delta = mean - total_mean
            new_total = total + n
            total_var = (total_var * total + var * n + delta ** 2 * total * n / new_total) / new_total
            total_mean = total_mean + delta * n / new_total
            total = new_total
        if total_mean is None:
            raise ValueError(f"{_args.who(self)}.adapt() received no data (an empty array or iterable); pass the "
                             f"training features, e.g. layer.adapt(x_train).")
        self.adapt_mean.assign(np.asarray(total_mean).reshape(self.adapt_mean.shape))
        self.adapt_variance.assign(np.asarray(total_var).reshape(self.adapt_variance.shape))
        self.count.assign(np.asarray(min(total, 2 ** 31 - 1)))

    def get_config(self):
        def listed(v):
            return None if v is None else np.asarray(v).tolist()

        return {**super().get_config(), "axis": self.axis, "invert": self.invert,
                "mean": listed(self.input_mean), "variance": listed(self.input_variance)}


def _batches(data, layer):
    """The batches of `data` as arrays: one for an array, each element's x for a dataset or iterable."""
    if isinstance(data, np.ndarray) or np.isscalar(data):
        yield np.asarray(data)
        return
    if hasattr(data, "as_numpy_iterator"):  # tf.data.Dataset, without importing TensorFlow
        spec = getattr(data, "element_spec", None)
        x_spec = spec[0] if isinstance(spec, tuple) else spec
        if x_spec is not None and len(getattr(x_spec, "shape", ())) == 1:
            data = data.batch(128)  # a dataset of scalars, as Keras
        data = data.as_numpy_iterator()
    elif hasattr(data, "__array__") and not hasattr(data, "__next__"):
        yield np.asarray(data)
        return
    elif hasattr(data, "__getitem__") and hasattr(data, "__len__") and not isinstance(data, (list, tuple)):
        seq = data  # a keras.utils.Sequence / PyDataset
        data = (seq[i] for i in range(len(seq)))
    if not hasattr(data, "__iter__"):
        raise TypeError(f"{_args.who(layer)}.adapt() expects a NumPy array, a tf.data.Dataset or an iterable of "
                        f"batches, received {type(data).__name__}.")
    for item in data:
        if isinstance(item, (tuple, list)) and item and not np.isscalar(item[0]):
            item = item[0]
        elif isinstance(item, dict):
            raise TypeError(f"{_args.who(layer)}.adapt() cannot pick the features out of a dict batch; pass "
                            f"the feature array (e.g. dataset.map(lambda d: d['x'])).")
        yield np.asarray(item)


class CategoryEncoding(Layer):
    """Encode integer ids as one-hot, multi-hot or count vectors of width `num_tokens`.

    Args:
        num_tokens: the number of ids (ids lie in [0, num_tokens)).
        output_mode: ``"multi_hot"`` (Keras 2's ``"binary"`` too), ``"one_hot"`` or ``"count"``.
        sparse: accepted when False (sparse outputs are not supported).

    ``one_hot`` adds a last axis (replacing a trailing axis of size 1); ``multi_hot`` and ``count`` fold
    the last axis of the ids into one vector per row.
    """

    _accepts_int_inputs = True

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        if output_mode == "binary":
            output_mode = "multi_hot"
        if output_mode not in ("one_hot", "multi_hot", "count"):
            raise ValueError(f"{_args.who(self)} expects output_mode 'one_hot', 'multi_hot' or 'count', received "
                             f"output_mode={output_mode!r}.")
        if num_tokens is None:
            raise ValueError(f"{_args.who(self)} needs num_tokens (the number of distinct ids).")
        self.num_tokens = _args.positive_int(self, "num_tokens", num_tokens)
        self.output_mode = output_mode
        if sparse:
            raise ValueError(f"{_args.who(self)}: sparse=True is not supported; use sparse=False (dense "
                             f"outputs).")
        self.sparse = False

    def _convert_eager(self, inputs):
        arr = np.asarray(inputs)
        return arr.astype(np.int64) if arr.dtype.kind == "f" else arr

    def call(self, inputs, count_weights=None):
        if count_weights is not None:
            raise ValueError(f"{_args.who(self)}: count_weights is not supported; weight the counts after the "
                             f"layer instead.")
        x = inputs
        if not str(x.dtype).startswith(("int", "uint")):
            x = ops.cast(x, "int64")
        op = CategoryEncodingOp(self.num_tokens, self.output_mode, self._dtype)
        return apply_op(op, [F._tensor(x, F._symbolic(x))])

    def get_config(self):
        return {**super().get_config(), "num_tokens": self.num_tokens, "output_mode": self.output_mode,
                "sparse": self.sparse}


def __getattr__(name: str):
    # tf.keras 2's `layers.experimental.preprocessing.RandomFlip` (and the other preprocessing layers that
    # graduated to `layers`) resolves through this module: find the name in `flexflow_keras.layers`.
    from flexflow_keras.layers.keras2_paths import module_getattr

    return module_getattr(__name__)(name)
