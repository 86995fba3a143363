"""Keras 3's connectionist-temporal-classification loss, `CTC` and `ctc`, on `keras.ops.ctc_loss` (ops/ctc.py:
`CTCLossOp` and its kernels); `flexflow_keras.losses` re-exports them.

As Keras 3's: `y_true` holds the label ids (batch, max_length) padded with 0, which is also the blank, so a
sample's label length is its count of non-zero ids; `y_pred` holds logits (batch, frames, classes), every frame
counted. Keras 2 scripts that pass probabilities and their own lengths call keras.backend.ctc_batch_cost.
"""

from __future__ import annotations

from flexflow_keras.losses_base import _Builtin


def ctc(y_true, y_pred):
    """CTC loss per sample, (batch,), of logits `y_pred` (batch, frames, classes) for labels `y_true` (batch,
    max_length) padded with the blank 0.

    Example:
        >>> keras.losses.ctc(labels, logits)  # one loss per sample
    """
    from flexflow_keras import ops

    if len(y_true.shape) != 2:
        raise ValueError(f"Targets `y_true` are expected to be a tensor of shape `(batch_size, max_length)` in "
                         f"integer format. Received: y_true.shape={tuple(y_true.shape)}")
    if len(y_pred.shape) != 3:
        raise ValueError(f"Logits `y_pred` are expected to be a tensor of shape `(batch_size, max_length, "
                         f"num_classes)`. Received: y_pred.shape={tuple(y_pred.shape)}")
    frames = ops.cast(ops.sum(ops.ones_like(y_pred[:, :, 0]), axis=1), "int32")
    label_length = ops.cast(ops.sum(ops.cast(ops.not_equal(y_true, 0), "int32"), axis=-1), "int32")
    return ops.ctc_loss(y_true, y_pred, label_length, frames, mask_index=0)


class CTC(_Builtin):
    """Keras 3's CTC loss (see `ctc`).

    Args:
        reduction, name, dtype: as `Loss`.

    Example:
        >>> model.compile(optimizer="adam", loss=keras.losses.CTC())
    """

    _fn = staticmethod(ctc)

    def __init__(self, reduction="sum_over_batch_size", name="ctc", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


CLASSES = (CTC,)
FUNCTIONS = {ctc: CTC}
SHORT_NAMES = {"ctc": CTC}
