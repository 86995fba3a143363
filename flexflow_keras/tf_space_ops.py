"""TensorFlow's block rearrangements under `python -m flexflow_keras` (tf_compat.py's `mapped_call` looks
here): `tf.nn.depth_to_space` and `tf.nn.space_to_depth` (and their `tf.compat.v1` spellings, whose third
positional argument is `name`), onto keras.ops.depth_to_space / space_to_depth (ops/space_depth.py):
eager on arrays, symbolic in a model (keras.io's EDSR calls tf.nn.depth_to_space between its upsampling
convolutions), differentiable under a GradientTape.

TensorFlow's CPU kernels take data_format "NHWC" only: "NCHW" and "NCHW_VECT_C" are its NotFoundError
(no kernel for the node on this device), another format or a block size below 2 its InvalidArgumentError, as
are a depth not divisible by block_size**2 and a height or width not divisible by block_size (a ValueError
while a model is built, as TensorFlow's shape inference raises).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.tf_convert import invalid
from flexflow_keras.tf_convert import ops as _ops
from flexflow_keras.tf_convert import tensor as _tensor

_FORMATS = ("NHWC", "NCHW", "NCHW_VECT_C")
_TF_TYPES = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF", "int32": "DT_INT32",
             "int64": "DT_INT64", "uint8": "DT_UINT8", "int8": "DT_INT8", "int16": "DT_INT16", "bool": "DT_BOOL"}


def _check(op: str, x, block_size, data_format) -> None:
    attrs = f"{op}[T={_TF_TYPES.get(str(np.dtype(x.dtype)), str(x.dtype))}, block_size={block_size}, " \
            f"data_format=\"{data_format}\"]"
    if data_format not in _FORMATS:
        invalid(f"Value for attr 'data_format' of \"{data_format}\" is not in the list of allowed values: "
                f"\"NHWC\", \"NCHW\", \"NCHW_VECT_C\" [Op:{op}]")
    if isinstance(block_size, bool) or int(block_size) != block_size or block_size < 2:
        invalid(f"Value for attr 'block_size' of {block_size} must be at least minimum 2 [Op:{op}]")
    if data_format != "NHWC":
        from flexflow_keras.tf_compat import NotFoundError

        raise NotFoundError(f"Could not find device for node: {{{{node {op}}}}} = {attrs}: TensorFlow's CPU "
                            f"kernels take data_format='NHWC' only. Transpose to NHWC (tf.transpose(x, [0, 2, 3, "
                            f"1])) and back, or use keras.ops.{'depth_to_space' if op == 'DepthToSpace' else 'space_to_depth'}"
                            f"(x, block_size, data_format='channels_first').")
    shape = tuple(x.shape)
    symbolic = isinstance(x, KerasTensor)
    if len(shape) != 4:
        _fail(symbolic, f"Shape must be rank 4 but is rank {len(shape)} for '{{{{node {op}}}}} = {attrs}' with input "
                        f"shapes: {list(shape)}", f"Input rank should be: 4 instead of: {len(shape)} [Op:{op}]")
    b = int(block_size)
    if op == "DepthToSpace" and shape[3] is not None and shape[3] % (b * b):
        _fail(symbolic, f"Dimension size must be evenly divisible by {b * b} but is {shape[3]} for '{{{{node {op}}}}} "
                        f"= {attrs}' with input shapes: {list(shape)}",
              f"Input depth dimension {shape[3]} should be divisible by: {b * b} [Op:{op}]")
    if op == "SpaceToDepth" and any(d is not None and d % b for d in shape[1:3]):
        _fail(symbolic, f"Dimension size must be evenly divisible by {b} but is "
                        f"{next(d for d in shape[1:3] if d is not None and d % b)} for '{{{{node {op}}}}} = {attrs}' "
                        f"with input shapes: {list(shape)}",
              f"Image width {shape[2]} and height {shape[1]} should be divisible by block_size: {b} [Op:{op}]")


def _fail(symbolic: bool, graph_message: str, eager_message: str):
    if symbolic:
        raise ValueError(graph_message)
    invalid(eager_message)


def depth_to_space(input, block_size, data_format="NHWC", name=None):  # noqa: A002 (TensorFlow's names)
    """`tf.nn.depth_to_space(input, block_size, data_format="NHWC")`: (N, H, W, C*b*b) -> (N, H*b, W*b, C)."""
    x = _tensor(input)
    _check("DepthToSpace", x, block_size, data_format)
    return _ops().depth_to_space(x, int(block_size))


def space_to_depth(input, block_size, data_format="NHWC", name=None):  # noqa: A002 (TensorFlow's names)
    """`tf.nn.space_to_depth(input, block_size, data_format="NHWC")`: (N, H*b, W*b, C) -> (N, H, W, C*b*b)."""
    x = _tensor(input)
    _check("SpaceToDepth", x, block_size, data_format)
    return _ops().space_to_depth(x, int(block_size))


def _v1(fn):
    """The tf.compat.v1 spelling: (input, block_size, name=None, data_format="NHWC")."""
    def call(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
        return fn(input, block_size, data_format=data_format)
    return call


CALLS = {"tf.nn.depth_to_space": depth_to_space, "tf.nn.space_to_depth": space_to_depth,
         **{f"tf.compat.v1.{space}depth_to_space": _v1(depth_to_space) for space in ("", "nn.")},
         **{f"tf.compat.v1.{space}space_to_depth": _v1(space_to_depth) for space in ("", "nn.")}}
