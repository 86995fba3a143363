"""tf.data's `Dataset.rejection_resample` (and ``tf.data.experimental.rejection_resample`` for ``apply``),
which data/slices.py's `SliceDataset` chains: the elements of a dataset resampled toward a target class
distribution, each as a pair ``(class_func(element), element)``, as TensorFlow's.

TensorFlow mixes two streams over the input: with probability ``m`` an element is taken from the input as it
is, otherwise from a rejection-sampled stream that keeps an element of class i with probability ``a_i``:
with ``r = target / (initial + tiny)``, ``m = min(r)`` and ``a = (r - m) / (max(r) - m)``. It stops when the
stream drawn has run out. Without `initial_dist` the initial distribution is estimated as the input streams
by: counts that start at 10 per class, updated after every 32 elements, and each element (and each draw of a
stream) uses the estimate of its group of 32. With ``m == 1`` the input is passed through; with ``m == 0``
only the rejection-sampled stream is read.

The draws are NumPy's from `seed` (without one, from a seed drawn from the framework's generator, so
``tf.random.set_seed`` repeats them), a new set each pass: the proportions are TensorFlow's, the draws not.
"""

from __future__ import annotations

import logging

import numpy as np

from flexflow_keras.data.derived import DerivedDataset, _elements, _is_batched, _is_endless
from flexflow_keras.data.slices import _call, _tensor
from flexflow_keras.errors import DataError

_log = logging.getLogger(__name__)
_TINY = float(np.finfo(np.float32).tiny)  # TensorFlow adds it to the initial probabilities
_ESTIMATE_BATCH = 32  # elements per update of the live estimate of the initial distribution
_SMOOTHING = 10  # the live estimate's starting count per class


def _distribution(method: str, arg: str, value) -> np.ndarray:
    dist = np.asarray(value, dtype=np.float32)
    if dist.ndim != 1 or dist.size == 0 or not np.isfinite(dist).all() or (dist < 0).any():
        raise DataError(f"Dataset.{method}: {arg} must be a list of non-negative probabilities, one per class, "
                        f"received {np.asarray(value).tolist()!r:.80}.")
    return dist


def _mixing(initial: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, float]:
    """TensorFlow's acceptance probability per class and probability of taking the input as it is."""
    ratio = target / (initial + np.float32(_TINY))
    low, high = ratio.min(), ratio.max()
    with np.errstate(invalid="ignore", divide="ignore"):  # equal ratios: NaN, as TensorFlow (nothing accepted)
        accept = (ratio - low) / (high - low)
    return accept, float(low)


def _class_of(class_func, item, num_classes: int):
    value = np.asarray(_call(class_func, item))
    if value.ndim != 0 or value.dtype.kind not in "iu":
        raise DataError(f"Dataset.rejection_resample: class_func must return one integer class id per element, "
                        f"received {value.dtype} of shape {value.shape}; cast it (tf.cast(..., tf.int32)) and "
                        f"resample before batch().")
    if not 0 <= int(value) < num_classes:
        raise DataError(f"Dataset.rejection_resample: class_func returned {int(value)}, outside [0, {num_classes}) "
                        f"for a target_dist of {num_classes} classes.")
    return value


def _estimates(classes: list, num_classes: int) -> np.ndarray:
    """The live estimate of the initial distribution for each group of 32 elements (TensorFlow's scan over
    the batched class ids: the counts include the group's own)."""
    counts = np.full(num_classes, _SMOOTHING, dtype=np.int64)
    out = []
    for start in range(0, len(classes), _ESTIMATE_BATCH):
        counts = counts + np.bincount(np.asarray(classes[start:start + _ESTIMATE_BATCH], dtype=np.int64),
                                      minlength=num_classes)
        out.append((counts / counts.sum()).astype(np.float32))
    return np.asarray(out, dtype=np.float32).reshape(-1, num_classes)


def rejection_resample(dataset, class_func, target_dist, initial_dist=None, seed=None) -> DerivedDataset:
    """`Dataset.rejection_resample`: ``(class, element)`` pairs resampled toward `target_dist` (see the module
    docstring)."""
    from flexflow_keras.utils import rng

    target = _distribution("rejection_resample", "target_dist", target_dist)
    initial = None if initial_dist is None else _distribution("rejection_resample", "initial_dist", initial_dist)
    if initial is not None and initial.shape != target.shape:
        raise DataError(f"Dataset.rejection_resample: initial_dist has {initial.size} classes and target_dist "
                        f"{target.size}; give one probability per class in both.")
    if _is_batched(dataset):
        raise DataError("Dataset.rejection_resample: the dataset is batched; class_func must give one class per "
                        "element, so resample before batch() (as TensorFlow requires).")
    if _is_endless(dataset):
        raise DataError("Dataset.rejection_resample on an endless dataset (repeat() without a count): resample "
                        "first, then repeat(), or give repeat a count.")
    seed = rng.make_seed() if seed is None else int(seed)
    static_m = None
    if initial is not None:  # TensorFlow's static probability of the input as it is (inf/NaN mix at run time)
        with np.errstate(invalid="ignore", divide="ignore"):
            static_m = float(np.min(target / initial))

    warned: list = []

    def make(k):
        items = _elements(dataset)
        values = [_class_of(class_func, item, target.size) for item in items]
        classes = np.asarray([int(v) for v in values], dtype=np.int64)
        pairs = [(_tensor(v), item) for v, item in zip(values, items, strict=True)]
        if static_m == 1:
            return pairs
        if initial is None:  # one (acceptance, m) per group of 32; the draws' weights end with the groups
            mixes = [_mixing(est, target) for est in _estimates(classes.tolist(), target.size)]
            group = np.arange(len(items)) // _ESTIMATE_BATCH
            accept = np.asarray([mixes[g][0][c] for g, c in zip(group, classes, strict=True)], dtype=np.float32)
            weights = [mixes[j // _ESTIMATE_BATCH][1] for j in range(len(mixes) * _ESTIMATE_BATCH)]
        else:  # one mix for all: the draws' weights never end
            a, m = _mixing(initial, target)
            accept, weights = a[classes] if len(items) else np.zeros(0, np.float32), None
        if initial is not None and not warned and float(np.nansum((1 - a) * initial)) >= 0.5:
            warned.append(True)  # TensorFlow prints it (its first 10 times); once is enough to say it
            _log.warning("Dataset.rejection_resample: the sampler rejects %.0f%% of the examples it filters "
                         "(initial_dist %s, target_dist %s).", 100 * float(np.nansum((1 - a) * initial)),
                         initial.tolist(), target.tolist())
        draws = np.random.default_rng([seed, k])
        keep = draws.random(len(items)) < accept  # NaN acceptances keep nothing, as TensorFlow's comparison
        filtered = [pair for pair, kept in zip(pairs, keep, strict=True) if kept]
        if static_m == 0:
            return filtered
        out, streams, pos = [], (pairs, filtered), [0, 0]
        while weights is None or len(out) < len(weights):
            weight = m if weights is None else weights[len(out)]
            s = 0 if draws.random() < weight else 1  # the input as it is with probability m
            if pos[s] == len(streams[s]):  # the stream drawn has run out: the end (stop_on_empty_dataset)
                break
            out.append(streams[s][pos[s]])
            pos[s] += 1
        return out
    return DerivedDataset(make, "rejection_resample(...)")
