"""keras.ops functions take Python lists and numbers as Keras 3 converts them (ints int32, floats float32):
expand_dims, ones_like / zeros_like / full_like and stack (which expands each part) stopped with
"'list' object has no attribute 'shape'" (or 'dtype'); and ops.reshape's second argument is Keras 3's
``newshape`` keyword; a list given to an op is an int32 / float32 tensor there, not NumPy's 64-bit array
(ops.reshape([1, 2, 3, 4], (2, 2)) was int64). Deep Learning with Python 3rd ed. ch. 15 generates text with
``keras.ops.expand_dims([token_id], axis=0)``."""

import numpy as np
import pytest

keras = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

CASES = [
    ("expand_dims", ([3],), {"axis": 0}),
    ("expand_dims", ([[1.5, 2.0]],), {"axis": -1}),
    ("expand_dims", (3,), {"axis": 0}),
    ("expand_dims", (2.5,), {"axis": -1}),
    ("expand_dims", ([True, False],), {"axis": 1}),
    ("ones_like", ([1, 2],), {}),
    ("ones_like", ([[1.0], [2.0]],), {}),
    ("zeros_like", ([1.0],), {}),
    ("zeros_like", (7,), {}),
    ("zeros_like", ([1, 2],), {"dtype": "float32"}),
    ("full_like", ([1, 2, 3], 4), {}),
    ("full_like", ([[0.5]], 2), {}),
    ("stack", ([[1], [2]],), {}),
    ("stack", ([[1.0, 2.0], [3.0, 4.0]],), {"axis": 1}),
    ("reshape", ([1, 2, 3, 4],), {"newshape": (2, 2)}),
    ("reshape", (np.arange(6.0),), {"newshape": (3, -1)}),
]


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_array_like_inputs_as_keras(name, args, kwargs):
    want = getattr(keras.ops, name)(*args, **kwargs)
    got = getattr(ff.ops, name)(*args, **kwargs)
    want = keras.ops.convert_to_numpy(want)
    got = np.asarray(got)
    assert got.shape == want.shape
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(got, want)


def test_generation_loop_of_the_notebook():
    """expand_dims of a one-token list feeds a model, as the notebook's generation loop does."""
    inp = ff.Input(shape=(1,), dtype="int32")
    out = ff.layers.Embedding(5, 2, embeddings_initializer="ones")(inp)
    model = ff.Model(inp, out)
    x = ff.ops.expand_dims([3], axis=0)
    assert tuple(np.shape(x)) == (1, 1)
    np.testing.assert_array_equal(np.asarray(model(x)), np.ones((1, 1, 2), np.float32))


def test_reshape_keyword_is_keras():
    import inspect

    assert list(inspect.signature(ff.ops.reshape).parameters)[:2] == list(
        inspect.signature(keras.ops.reshape).parameters)[:2]
