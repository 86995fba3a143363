"""keras.ops.concatenate, stack and where (and layers.concatenate in a model) compute in Keras 3's result
dtype: float32 with int64 is float32 and float16 with int32 float16; NumPy's promotion gave float64 here.
keras.io's feature-preprocessing recipe concatenates normalised floats with IntegerLookup's int64 multi-hot
columns: its preprocessing model gave float64, and fit() of the next model stopped in the loader on
"Cannot cast array data from dtype('float64') to dtype('float32')"."""

import itertools

import numpy as np
import pytest

pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

DTYPES = ("bool", "uint8", "int32", "int64", "float16", "float32", "float64")


def _kdtype(x) -> str:
    return str(x.dtype.name if hasattr(x.dtype, "name") else x.dtype)


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_eager_and_symbolic_dtypes_are_keras(a, b):
    x, y = (np.arange(6).reshape(2, 3) % 2).astype(a), (np.arange(6).reshape(2, 3) % 3).astype(b)
    cond = np.array([[True, False, True], [False, True, False]])
    for name, fn in (("concatenate", lambda K, u, v: K.ops.concatenate([u, v], axis=-1)),
                     ("stack", lambda K, u, v: K.ops.stack([u, v], axis=1)),
                     ("where", lambda K, u, v: K.ops.where(cond, u, v))):
        want = fn(keras, x, y)
        got = fn(ff, x, y)
        assert str(np.asarray(got).dtype) == _kdtype(want), (name, a, b)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        if name != "where":
            sym = fn(ff, ff.Input((3,), dtype=a), ff.Input((3,), dtype=b))
            ksym = fn(keras, keras.Input((3,), dtype=a), keras.Input((3,), dtype=b))
            assert str(sym.dtype) == _kdtype(ksym), (name, a, b)


def test_a_model_concatenating_floats_and_int64_columns_fits_as_keras():
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(8, 2)
    ids = (np.arange(24).reshape(8, 3) % 2).astype(np.int64)
    y = np.linspace(0, 1, 8, dtype=np.float32)
    out = {}
    for K in (keras, ff):
        a, b = K.Input((2,)), K.Input((3,), dtype="int64")
        joined = K.layers.concatenate([a, b])
        pre = K.Model([a, b], joined)
        feats = np.asarray(pre([x, ids]))
        inp = K.Input((5,))
        model = K.Model(inp, K.layers.Dense(1, kernel_initializer="ones")(inp))
        model.compile(optimizer=K.optimizers.SGD(0.1), loss="mse")
        hist = model.fit(feats, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        out[K.__name__] = (str(joined.dtype).replace("<dtype: '", "").rstrip("'>"), feats.dtype, hist.history["loss"])
    (kd, kf, kl), (fd, ff_, fl) = out["keras"], out["flexflow_keras"]
    assert (fd, ff_) == (kd, kf) == ("float32", np.float32)
    np.testing.assert_allclose(fl, kl, rtol=1e-5)
