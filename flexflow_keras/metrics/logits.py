"""A softmax or sigmoid output as the metrics see it: its probabilities, carrying the activation's input.

Keras 3's TensorFlow backend leaves ``_keras_logits`` on the output of a softmax or sigmoid, and its
crossentropies (``ops.categorical_crossentropy``, ``sparse_categorical_crossentropy``,
``binary_crossentropy``, and so ``binary_focal_crossentropy``'s crossentropy term) take that tensor's
logits instead of its probabilities, in the metrics of a traced step as in its loss. The numbers differ where the probabilities saturate (the clipping at 1e-7
bounds the crossentropy of probabilities near 16, the logits' is unbounded), and everywhere for a binary
crossentropy of a softmax output (the sigmoid crossentropy of the softmax's logits) or a categorical one
of a sigmoid output (the softmax crossentropy of its logits).

The metrics task hands such metrics the output as a `WithLogits` array; the host crossentropies of
`flexflow_keras.losses` read its ``_keras_logits`` as that backend does. Only the array itself carries
them: a slice or any value computed from it does not, as in TensorFlow.
"""

from __future__ import annotations

import numpy as np

CROSSENTROPIES = frozenset({"categorical_crossentropy", "sparse_categorical_crossentropy", "binary_crossentropy",
                            "binary_focal_crossentropy"})


class WithLogits(np.ndarray):
    """An output's probabilities (a view, no copy) with ``_keras_logits``: the logits they came from."""

    _keras_logits: np.ndarray


def carrying(y_pred: np.ndarray, logits: np.ndarray) -> WithLogits:
    """`y_pred` viewed as a `WithLogits` carrying `logits` (an array of the same shape)."""
    out = np.asarray(y_pred).view(WithLogits)
    out._keras_logits = np.asarray(logits)
    return out


def reads_logits(metric) -> bool:
    """Whether `metric` may compute a crossentropy of the output it is given: a mean of one of the built-in
    crossentropy functions, of a crossentropy Loss, or of a function of the user's (which may call them);
    the other built-in metrics never do."""
    fn = getattr(metric, "_fn", None)
    if fn is None:
        return False
    owner = getattr(fn, "__self__", None)  # a Loss object's per_sample
    if owner is not None and hasattr(owner, "per_sample"):
        inner = getattr(owner, "fn", None)
        if inner is None:  # a Loss subclass with its own call
            return not type(owner).__module__.startswith("flexflow_keras.")
        fn = inner
    if not getattr(fn, "__module__", "").startswith("flexflow_keras."):
        return True
    return getattr(fn, "__name__", "") in CROSSENTROPIES
