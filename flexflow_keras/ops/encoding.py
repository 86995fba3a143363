"""`CategoryEncodingOp`: integer ids to one-hot / multi-hot / count vectors (no gradient)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from flexflow_keras.errors import DataError, ShapeError
from flexflow_keras.ops._util import deferred_check, fmt, kernel, to_host
from flexflow_keras.ops.base import Op
from flexflow_keras.ops.einsum_dense import lead_tile
from flexflow_keras.ops.graph import TensorSpec
from kernels import encoding as kenc


@dataclass(frozen=True)
class CategoryEncodingOp(Op):
    """Keras' CategoryEncoding: `one_hot` maps each id to a vector of `num_tokens` (a trailing dim of 1 is
    replaced), `multi_hot` / `count` fold the ids of the last axis into one vector per row.

    Attributes:
        num_tokens: the output width (ids lie in [0, num_tokens)). mode: "one_hot", "multi_hot" or "count".
        dtype: the output dtype.
    """

    type_name: ClassVar[str] = "category_encoding"
    differentiable_inputs: ClassVar[tuple[bool, ...]] = (False,)
    num_tokens: int = 1
    mode: str = "multi_hot"
    dtype: str = "float32"

    def __post_init__(self):
        if self.mode not in kenc.MODES:
            raise ValueError(f"category_encoding expects mode in {sorted(kenc.MODES)}, received {self.mode!r}.")

    def output_specs(self, inputs, weights):
        if len(inputs) != 1 or weights:
            raise ShapeError(f"category_encoding takes 1 input, received {len(inputs)}.")
        s = tuple(inputs[0].shape)
        if self.mode == "one_hot":
            lead = s[:-1] if len(s) > 1 and s[-1] == 1 else s
        else:
            if len(s) < 2:
                raise ShapeError(f"category_encoding ({self.mode}) folds the last axis of ids into one vector "
                                 f"per sample and needs ids of rank >= 2 (batch, ids), received shape {fmt(s)}; "
                                 f"reshape the ids to (batch, 1) or (batch, n).")
            lead = s[:-1]
        return (TensorSpec(lead + (int(self.num_tokens),), self.dtype),)

    def tile(self, shapes, out_box, part=0, parts=1):
        return lead_tile(shapes, out_box, len(shapes.outputs[0]) - 1)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        ids = inputs[0]
        if self.mode == "one_hot":
            ids = ids.reshape(ids.size, 1)
        tokens = self.num_tokens

        def describe(pos, value) -> DataError:
            return DataError(f"CategoryEncoding received id {value!r} at flat position {pos} of the input, "
                              f"outside [0, {tokens}). Set num_tokens larger than the largest id (or map the ids "
                              f"first).")

        bad = kernel(kenc, "category_encode", ctx)(ids, outputs[0], kenc.MODES[self.mode],
                                                   **deferred_check(ctx, self, describe))
        if bad >= 0:
            raise describe(bad, to_host(inputs[0]).reshape(-1)[bad].item())

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        """Ids have no gradient."""
