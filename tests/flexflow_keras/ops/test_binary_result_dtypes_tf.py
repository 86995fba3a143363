"""keras.ops' element-wise binary functions (and the operators of symbolic tensors and weights) compute in
Keras 3's result dtype: an int tensor with a float32 one is float32 (NumPy's rule said float64), int16 with
float16 is float16, true division of ints is float32 (it stopped on NumPy's "Cannot cast ufunc 'divide'
output from float64 to int32"), a list of Python floats is float32. keras.io's sample-size recipe raised a
Python list to a float32 Variable's power and got float64."""

import itertools

import numpy as np
import pytest

pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
FNS = ("add", "subtract", "multiply", "maximum", "power")


def _kdtype(x) -> str:
    return str(x.dtype.name if hasattr(x.dtype, "name") else x.dtype)


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_symbolic_dtypes_are_keras(a, b):
    for fn in ("add", "multiply", "divide"):
        got = getattr(ff.ops, fn)(ff.Input((3,), dtype=a), ff.Input((3,), dtype=b))
        want = getattr(keras.ops, fn)(keras.Input((3,), dtype=a), keras.Input((3,), dtype=b))
        assert str(got.dtype) == _kdtype(want), (fn, a, b)


@pytest.mark.parametrize("fn", FNS + ("divide",))
def test_eager_values_and_dtypes_are_keras(fn):
    rs = np.random.RandomState(0)
    for a, b in itertools.product(("int32", "int64", "float16", "float32"), repeat=2):
        x = (rs.randint(1, 4, 5)).astype(a)
        y = (rs.randint(1, 4, 5)).astype(b)
        got = getattr(ff.ops, fn)(x, y)
        want = getattr(keras.ops, fn)(x, y)
        assert str(np.asarray(got).dtype) == _kdtype(want), (fn, a, b)
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-3)


def test_python_lists_and_weights():
    for lib in (ff, keras):
        lib.utils.set_random_seed(0)
    got = [ff.ops.add([1.0, 2.0], np.ones(2, "float32")), [165, 330] ** ff.Variable(0.5),
           ff.Variable(np.float32(2.0)) * [1, 2]]
    want = [keras.ops.add([1.0, 2.0], np.ones(2, "float32")), [165, 330] ** keras.Variable(0.5),
            keras.Variable(np.float32(2.0)) * [1, 2]]
    for g, w in zip(got, want, strict=True):
        assert str(np.asarray(g).dtype) == _kdtype(w)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def _model(lib):
    x = lib.Input((4,))
    steps = lib.Input((4,), dtype="int32")
    h = lib.layers.Dense(4)(x)
    out = lib.ops.divide(lib.ops.multiply(h, steps), lib.ops.add(steps, steps))
    return lib.Model([x, steps], out)


def test_model_mixing_int_and_float_inputs_predicts_and_trains_as_keras():
    rs = np.random.RandomState(1)
    x = rs.randn(8, 4).astype("float32")
    steps = rs.randint(1, 5, (8, 4)).astype("int32")
    y = rs.randn(8, 4).astype("float32")
    models = [_model(ff), _model(keras)]
    weights = [rs.randn(4, 4).astype("float32"), rs.randn(4).astype("float32")]
    results = []
    for lib, m in zip((ff, keras), models, strict=True):
        m.set_weights(weights)
        m.compile(optimizer=lib.optimizers.SGD(0.1), loss="mse")
        p0 = m.predict([x, steps], verbose=0)
        m.fit([x, steps], y, epochs=1, batch_size=4, verbose=0, shuffle=False)
        results.append((p0, m.get_weights()))
    (p0, w1), (rp0, rw1) = results
    assert p0.dtype == np.float32
    np.testing.assert_allclose(p0, rp0, rtol=1e-5, atol=1e-6)
    for w, r in zip(w1, rw1, strict=True):
        np.testing.assert_allclose(w, r, rtol=1e-5, atol=1e-6)
