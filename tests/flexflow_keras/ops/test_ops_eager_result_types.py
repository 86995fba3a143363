"""Every public keras.ops function (and keras.ops.image's) answers an eager call with tensors: EagerTensors
(``.numpy()``, as Keras 3's TensorFlow tensors), in tuples and lists too, never a bare ndarray or NumPy
scalar. The walk covers ``ops.__all__``, so a function added later that returns plain NumPy fails here; one
that none of the generic argument lists fits needs its arguments in `_ARGS`."""

import inspect
import warnings

import numpy as np
import pytest

from flexflow_keras import ops
from flexflow_keras.errors import FlexFlowKerasError
from flexflow_keras.ops.eager_tensor import EagerTensor

F = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
V = np.array([0.5, 0.2, 0.3], np.float32)
I3 = np.array([1, 0, 2], np.int32)
B = np.array([True, False, True])
SQ = np.array([[2.0, 0.5], [0.5, 1.0]], np.float32)
IMG = np.arange(2 * 6 * 6 * 2, dtype=np.float32).reshape(2, 6, 6, 2) / 100
KER = np.ones((3, 3, 2, 4), np.float32) / 9
# generic argument lists, tried in order until one call succeeds
_GENERIC = [(F,), (V,), (I3,), (F, F), (V, V), (I3, I3), ((2, 3),), (3,), (F, 0), (V, 0), (SQ,), (B,), (B, B),
            ([F, F],), (I3, 3), (F, V), (V, I3), (B, V, V), (2, 3), ((2, 3), 1.0), (F, 1), (F, (3, 2)), (V, 1.0),
            (V, 0.0, 1.0), (F, F, F), (SQ, SQ), (F, [1, 0]), (F, 1, 1)]
# functions no generic list fits
_ARGS = {
    "activation": (F, "relu"), "activation_fn": (F, "relu"), "cast": (F, "int32"),
    "batch_norm": (F, np.ones(3, "float32"), np.zeros(3, "float32"), np.zeros(3, "float32"), np.ones(3, "float32")),
    "embedding": (I3, F.T.copy()), "loss": ("mse", F, F), "sparse_categorical_crossentropy": (I3[:2], F),
    "broadcast_to": (V, (2, 3)), "slice": (F, (0, 0), (1, 2)), "in_top_k": (I3[:2], F, 1),
    "conv": (IMG, KER), "conv2d": (IMG, KER), "conv_transpose": (IMG, np.ones((3, 3, 4, 2), np.float32)),
    "depthwise_conv": (IMG, np.ones((3, 3, 2, 1), np.float32)),
    "separable_conv": (IMG, np.ones((3, 3, 2, 1), np.float32), np.ones((1, 1, 2, 4), np.float32)),
    "max_pool": (IMG, 2), "average_pool": (IMG, 2), "pool2d": (IMG, 2), "global_pool2d": (IMG,),
    "ctc_decode": (np.full((1, 4, 3), 1 / 3, np.float32), np.array([4], np.int32)),
    "ctc_loss": (np.array([[1, 2]], np.int32), np.full((1, 4, 3), 1 / 3, np.float32), np.array([2], np.int32),
                 np.array([4], np.int32)),
    "affine_transform": (IMG, np.array([1, 0, 0, 0, 1, 0, 0, 0], np.float32)),
    "map_coordinates": (F, np.array([[0.0, 1.0], [1.0, 2.0]], np.float32), 1),
    "resize": (IMG, (3, 3)), "extract_patches": (IMG, 2), "pad_images": (IMG, 1, 1, 1, 1),
    "crop_images": (IMG, 1, 1, 1, 1), "extract_patches_3d": (IMG[..., None], 2),
    "get_item": (F, 0), "take_along_axis": (F, np.array([[2], [0]], np.int32), 1),
    "cond": (True, lambda: F, lambda: F * 2), "switch": (1, [lambda x: x, lambda x: x * 2], F),
    "while_loop": (lambda x: x.sum() < 10, lambda x: x * 2, F), "fori_loop": (0, 2, lambda i, x: x + i, F),
    "scan": (lambda c, x: (c + x, c), F[0], F), "map": (lambda x: x * 2, F),
    "vectorized_map": (lambda x: x * 2, F), "associative_scan": (lambda a, b: a + b, F),
    "stft": (np.linspace(0, 1, 16, dtype=np.float32), 4, 2, 4),
    "istft": ((np.ones((3, 3), np.float32), np.zeros((3, 3), np.float32)), 4, 2, 4),
    "unravel_index": (I3, (2, 2)), "dot_product_attention": (IMG, IMG, IMG),
    "depth_to_space": (np.ones((1, 2, 2, 8), np.float32), 2), "space_to_depth": (IMG, 2),
}


def _public_functions():
    # ops/__init__'s own list of the names that answer with Python values (a shape tuple, a dim count, ...)
    names = [("ops", n) for n in ops.__all__ if n not in ops._NOT_TENSORS]
    names += [("ops.image", n) for n in ops.image.__all__]
    out = []
    for space, name in names:
        fn = getattr(ops if space == "ops" else ops.image, name)
        if inspect.isfunction(fn):
            out.append(pytest.param(fn, id=f"{space}.{name}"))
    return out


def _leaves(value):
    if isinstance(value, list | tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _binds(fn, args) -> bool:
    try:
        inspect.signature(fn).bind(*args)
    except TypeError:
        return False
    return True


def _call(fn):
    """fn on its `_ARGS` list (any error fails the test), or on the first generic list that its signature
    takes and that it does not refuse as the wrong kind of argument (the framework's own errors, a TypeError
    or ValueError): any other exception (an AttributeError, IndexError, ...) is a bug and fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if fn.__name__ in _ARGS:
            return fn(*_ARGS[fn.__name__])
        errors = []
        for args in (a for a in _GENERIC if _binds(fn, a)):
            try:
                return fn(*args)
            except (FlexFlowKerasError, TypeError, ValueError) as e:  # not this kind of argument: the next may fit
                errors.append(f"{type(e).__name__}: {e}")
    pytest.fail(f"ops.{fn.__name__}: no argument list fits it; add one to _ARGS ({errors[-1] if errors else ''})")


@pytest.mark.parametrize("fn", _public_functions())
def test_eager_call_returns_tensors(fn):
    result = _call(fn)
    bare = [type(leaf).__name__ for leaf in _leaves(result)
            if type(leaf) is np.ndarray or (isinstance(leaf, np.generic) and not hasattr(leaf, "numpy"))]
    assert not bare, f"ops.{fn.__name__} returned plain NumPy ({bare}) on an eager call: return an EagerTensor"
    for leaf in _leaves(result):
        if isinstance(leaf, EagerTensor):
            assert isinstance(leaf.numpy(), np.ndarray | np.generic)


def test_creation_functions_answer_numpy():
    assert ops.ones((2,)).numpy().tolist() == [1.0, 1.0]
    assert ops.zeros((2, 2)).numpy().dtype == np.float32
    assert ops.arange(3).numpy().tolist() == [0, 1, 2]
    assert ops.eye(2).numpy().tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert ops.size(F).numpy() == 6 and range(ops.size(F))[-1] == 5
    parts = ops.split(F, 3, axis=1)
    assert all(isinstance(p, EagerTensor) for p in parts)
    assert ops.shape(F) == (2, 3) and ops.ndim(F) == 2 and type(ops.convert_to_numpy(F)) is np.ndarray
