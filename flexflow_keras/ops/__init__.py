"""The operator IR and the functional op API (docs/contracts.md, section 3).

`base` holds the op contract (`Op`, `KernelContext`, `apply_op`), `graph` the symbolic graph
(`Variable`, `KerasTensor`, `OpNode`, `OpGraph`). One frozen dataclass per operator lives in `nn`,
`normalization`, `math_ops`, `shape_ops`, `losses` (and `conv`, `pooling`); `functional` holds the
functions layers and custom code call (``ops.dense``, ``ops.add``, ``ops.mean``, ``ops.loss``, ...):
symbolic on KerasTensors, eager on NumPy arrays. The rest of Keras 3's `keras.ops` is composed from those in
`numpy_api`, `numpy_indexing`, `numpy_extra`, `numpy_math`, `numpy_arrays`, `numpy_stats` and `nn_more`
(dtypes: `dtype_rules`); branches, loops and scans in `control_flow` and `control_scan`.

Example:
    >>> from flexflow_keras import ops
    >>> ops.relu(np.array([-1.0, 2.0], np.float32)).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

import inspect as _inspect
import sys

from flexflow_keras.ops import attention_fn as _attention_fn
from flexflow_keras.ops import control_flow as _control_flow
from flexflow_keras.ops import control_scan as _control_scan
from flexflow_keras.ops import fft as _fft
from flexflow_keras.ops import functional as _functional
from flexflow_keras.ops import linalg as _linalg
from flexflow_keras.ops import loss_functions as _loss_functions
from flexflow_keras.ops import nn_more as _nn_more
from flexflow_keras.ops import numpy_api as _numpy_api
from flexflow_keras.ops import numpy_arrays as _numpy_arrays
from flexflow_keras.ops import numpy_extra as _numpy_extra
from flexflow_keras.ops import numpy_indexing as _numpy_indexing
from flexflow_keras.ops import numpy_math as _numpy_math
from flexflow_keras.ops import numpy_stats as _numpy_stats
from flexflow_keras.ops import segment as _segment
from flexflow_keras.ops import space_depth as _space_depth
from flexflow_keras.ops.attention_fn import *  # noqa: F403 - dot_product_attention, psnr, histogram, unravel_index
from flexflow_keras.ops.base import KernelContext, Op, apply_op, op_registry
from flexflow_keras.ops.control_flow import *  # noqa: F403 - cond, switch, while_loop, fori_loop
from flexflow_keras.ops.control_scan import *  # noqa: F403 - scan, map, vectorized_map, associative_scan
from flexflow_keras.ops.custom_gradient import custom_gradient as custom_gradient
from flexflow_keras.ops.eager_tensor import eager_results as _eager_results
from flexflow_keras.ops.fft import *  # noqa: F403 - fft, fft2, ifft2, rfft, irfft, stft, istft
from flexflow_keras.ops.functional import *  # noqa: F403 - the functional API is this package's surface
from flexflow_keras.ops.graph import KerasTensor, OpGraph, OpNode, TensorSpec, Variable
from flexflow_keras.ops.linalg import *  # noqa: F403 - keras.ops.linalg's functions, top-level as in Keras 3
from flexflow_keras.ops.loss_functions import *  # noqa: F403 - the per-sample loss functions
from flexflow_keras.ops.losses import LOSS_NAMES, LossOp
from flexflow_keras.ops.math_ops import (
    BINARY_OPS,
    AddOp,
    BinaryOp,
    CastOp,
    CompareOp,
    DivideOp,
    MaximumOp,
    MinimumOp,
    MultiplyOp,
    PowerOp,
    ReduceOp,
    ScalarOp,
    StopGradientOp,
    SubtractOp,
    UnaryOp,
    WhereOp,
)
from flexflow_keras.ops.nn_more import *  # noqa: F403 - shrink activations, glu, sparsemax, rms/layer norm
from flexflow_keras.ops.nn_ops import (
    ActivationOp,
    DropoutOp,
    EmbeddingOp,
    LinearOp,
    LogSoftmaxOp,
    MatMulOp,
    SoftmaxOp,
    VariableOp,
)
from flexflow_keras.ops.normalization import BatchNormOp, LayerNormOp
from flexflow_keras.ops.numpy_api import *  # noqa: F403 - keras.ops' NumPy-like functions (i9-ops)
from flexflow_keras.ops.numpy_arrays import *  # noqa: F403 - moveaxis, roll, stacks, diagonal, cumprod, ...
from flexflow_keras.ops.numpy_extra import *  # noqa: F403 - and the rest (i9-ops)
from flexflow_keras.ops.numpy_math import *  # noqa: F403 - element-wise math (tan, erf, hypot, isclose, ...)
from flexflow_keras.ops.numpy_stats import *  # noqa: F403 - tensordot, quantiles, bincount, unique, ...
from flexflow_keras.ops.segment import *  # noqa: F403 - segment_sum / max / min / prod (graph networks)
from flexflow_keras.ops.shape_ops import ConcatOp, ReshapeOp, TransposeOp
from flexflow_keras.ops.space_depth import *  # noqa: F403 - depth_to_space, space_to_depth

# Conv2D and pooling ops live in their own modules (another engineer's); loaded on first use so this
# package imports without them.
_LAZY = {"conv2d": "conv", "Conv2DOp": "conv", "pool2d": "pooling", "global_pool2d": "pooling",
         "Pool2DOp": "pooling", "GlobalPool2DOp": "pooling", "RecurrentOp": "recurrent"}


from flexflow_keras.errors import FlexFlowKerasError  # noqa: E402


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module = importlib.import_module(f"flexflow_keras.ops.{_LAZY[name]}")
        value = getattr(module, name)
        value = _eager_results(value) if _inspect.isfunction(value) else value
        globals()[name] = value
        return value
    raise AttributeError(f"module 'flexflow_keras.ops' has no attribute {name!r}")


class UnsupportedOpsError(FlexFlowKerasError, AttributeError):
    """A Keras 3 `keras.ops` feature flexflow_keras does not have (an AttributeError, so hasattr is False)."""


_MODULES = (_functional, _control_flow, _control_scan, _loss_functions,
            _numpy_api, _numpy_indexing, _numpy_extra, _numpy_math, _numpy_arrays, _numpy_stats, _nn_more,
            _segment, _space_depth, _linalg, _fft, _attention_fn)
# a module's own __all__ where it has one (ops/segment.py's segment_reduce is the runner's, not keras.ops')
__all__ = [n for m in _MODULES for n in getattr(m, "__all__", dir(m)) if not n.startswith("_")
           and callable(getattr(m, n)) and getattr(getattr(m, n), "__module__", "") == m.__name__] + [
    "KernelContext", "Op", "apply_op", "op_registry", "KerasTensor", "OpGraph", "OpNode", "TensorSpec",
    "Variable", "LOSS_NAMES", "LossOp", "BinaryOp", "CastOp", "CompareOp", "ReduceOp", "ScalarOp",
    "StopGradientOp", "UnaryOp", "WhereOp", "BINARY_OPS", "AddOp", "SubtractOp", "MultiplyOp", "DivideOp",
    "MaximumOp", "MinimumOp", "PowerOp", "ActivationOp", "DropoutOp", "EmbeddingOp", "LinearOp",
    "LogSoftmaxOp", "MatMulOp", "SoftmaxOp", "VariableOp", "BatchNormOp", "LayerNormOp", "ConcatOp",
    "ReshapeOp", "TransposeOp", *_LAZY]


# Keras 3's convolution functions. Two of them share their names with submodules of this package (conv.py,
# conv_transpose.py): those are imported first, so the functions below stay the package's attributes.
from flexflow_keras.ops import conv as _conv_module  # noqa: E402,F401
from flexflow_keras.ops import conv_transpose as _conv_transpose_module  # noqa: E402,F401
from flexflow_keras.ops.conv_api import (  # noqa: E402
    average_pool,
    conv,
    conv_transpose,
    depthwise_conv,
    max_pool,
    separable_conv,
)

__all__ += ["average_pool", "conv", "conv_transpose", "depthwise_conv", "max_pool", "separable_conv"]

from flexflow_keras.ops import image  # noqa: E402,F401  keras.ops.image (extract_patches, resize, ...)
from flexflow_keras.ops.ctc import ctc_decode, ctc_loss  # noqa: E402  (kernels/ctc.py)

__all__ += ["ctc_decode", "ctc_loss"]

# Every public function's eager result is an EagerTensor (``.numpy()``), on every path: the modules above
# compute on plain ndarrays (which internal callers keep), and their public names here give tensors, as
# Keras 3's TensorFlow backend does. Four answer with Python values in Keras too: a shape tuple, a dim count,
# a bool, and convert_to_numpy's NumPy array. (ops.constant is a graph constant: a KerasTensor.)
_NOT_TENSORS = {"shape", "ndim", "is_tensor", "convert_to_numpy", "apply_op", "op_registry"}
for _name in __all__:
    if _name not in _NOT_TENSORS and _inspect.isfunction(globals().get(_name)):
        globals()[_name] = _eager_results(globals()[_name])
del _name

# keras.ops.linalg is a real submodule (ops/linalg.py): its functions answer EagerTensors there too, and its
# `norm` is keras.ops.norm.
for _name in _linalg.__all__:
    setattr(_linalg, _name, globals()[_name])
linalg = _linalg

# Keras 3's submodules keras.ops.numpy / nn / math / core hold the functions that are flat here
# (keras.ops.numpy.sum is keras.ops.sum): the same module under those names, for attributes and imports.
for _sub in ("numpy", "nn", "math", "core"):
    sys.modules[f"{__name__}.{_sub}"] = sys.modules[__name__]
    globals()[_sub] = sys.modules[__name__]
del _sub
