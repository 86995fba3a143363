"""tf.cond, tf.case, tf.switch_case, tf.while_loop, tf.scan, tf.map_fn, tf.vectorized_map, tf.foldl and
tf.foldr under the runner (tf_control_flow.py) against TensorFlow 2.21: eager values, dtypes and result
structures, TensorFlow's errors, gradients under our GradientTape, and a layer using them in a model (a
symbolic predicate, index and loop condition) predicting and training as tf.keras from the same weights."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias, tree  # noqa: E402
from flexflow_keras.tf_compat import InvalidArgumentError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
X = np.arange(1, 5, dtype=np.float32)
M = np.arange(6, dtype=np.float32).reshape(3, 2) - 2.0


def _same(got, want):
    """The same nested structure (container types included), dtypes and values."""
    if isinstance(want, list | tuple | dict):
        assert type(got) is type(want), (got, want)
        assert len(got) == len(want)
        for g, w in zip(tree.flatten(got) if isinstance(want, dict) else got,
                        tree.flatten(want) if isinstance(want, dict) else want, strict=True):
            _same(g, w)
        return
    if not hasattr(want, "shape"):  # TensorFlow's eager cond returns the branch's Python value as it is
        assert type(got) is type(want) and got == want
        return
    want = want if isinstance(want, np.ndarray) else want.numpy()
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


def _c(t, v):
    return t.constant(v)


CASES = {
    "cond_py": lambda t: t.cond(True, lambda: 1, lambda: 2),
    "cond_tensor": lambda t: t.cond(_c(t, False), lambda: [_c(t, 1.0)], lambda: [_c(t, 2.0) * X]),
    "cond_one_element_pred": lambda t: t.cond(_c(t, [True]), lambda: (X, 3), lambda: (X * 2, 4)),
    "case_first_true": lambda t: t.case([(_c(t, False), lambda: 1), (_c(t, True), lambda: 2), (_c(t, True), lambda: 5)],
                                        default=lambda: 3),
    "case_default": lambda t: t.case([(_c(t, False), lambda: _c(t, 1.0))], default=lambda: _c(t, 3.0)),
    "case_last_is_default": lambda t: t.case([(_c(t, False), lambda: X), (_c(t, True), lambda: X * 3)]),
    "case_exclusive": lambda t: t.case([(_c(t, False), lambda: 1.0), (_c(t, True), lambda: 2.0)], exclusive=True),
    "switch": lambda t: t.switch_case(_c(t, 1), [lambda: X, lambda: X * 2, lambda: X * 3]),
    "switch_out_of_range": lambda t: t.switch_case(_c(t, 7), [lambda: 10, lambda: 20, lambda: 30]),
    "switch_negative": lambda t: t.switch_case(_c(t, -1), [lambda: 10, lambda: 20, lambda: 30]),
    "switch_default": lambda t: t.switch_case(_c(t, 5), [lambda: 10, lambda: 20], default=lambda: 99),
    "switch_in_range_with_default": lambda t: t.switch_case(_c(t, 1), [lambda: 10, lambda: 20], default=lambda: 9),
    "switch_dict_int64": lambda t: t.switch_case(t.constant(0, "int64"), {1: lambda: 1.0, 0: lambda: 2.0}),
    "while_list_list": lambda t: t.while_loop(lambda i: i < 3, lambda i: [i + 1], [0]),
    "while_list_tuple_body": lambda t: t.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1, j * 2.0), [0, 1.0]),
    "while_tuple_list_body": lambda t: t.while_loop(lambda i, j: i < 3, lambda i, j: [i + 1, j * 2.0], (0, 1.0)),
    "while_not_run": lambda t: t.while_loop(lambda i, j: i > 3, lambda i, j: (i + 1, j), [0, X]),
    "while_nested": lambda t: t.while_loop(lambda i, p: i < 4, lambda i, p: (i + 1, (p[0] * 2, p[1] + 1.0)),
                                           (0, (1, M))),
    "while_maximum_iterations": lambda t: t.while_loop(lambda i, v: i < 30, lambda i, v: (i + 1, v * 0.5), (0, X),
                                                       maximum_iterations=5),
    "while_dtype_changes": lambda t: t.while_loop(lambda i: i < 3, lambda i: (t.cast(i, "float32") + 1,), (0,)),
    "scan": lambda t: t.scan(lambda a, v: a + v, X),
    "scan_init": lambda t: t.scan(lambda a, v: a * 0.5 + v, X, initializer=10.0),
    "scan_reverse": lambda t: t.scan(lambda a, v: a * 0.5 + v, X, reverse=True),
    "scan_reverse_init": lambda t: t.scan(lambda a, v: a * 0.5 + v, M, initializer=np.ones(2, np.float32),
                                          reverse=True),
    "scan_rows": lambda t: t.scan(lambda a, v: a * v, M),
    "scan_tuple_elems": lambda t: t.scan(lambda a, v: a + v[0] * v[1], (X, X), initializer=0.0),
    "scan_tuple_init": lambda t: t.scan(lambda a, v: (a[0] + v, a[1] * v), X, initializer=(0.0, 1.0)),
    "scan_int64": lambda t: t.scan(lambda a, v: a + v, np.arange(3), initializer=np.int64(0)),
    "scan_empty": lambda t: t.scan(lambda a, v: a + v, np.zeros((0,), np.float32), initializer=0.0),
    "scan_one": lambda t: t.scan(lambda a, v: a + v, X[:1]),
    "map_fn": lambda t: t.map_fn(lambda v: v * 2, X),
    "map_fn_rows": lambda t: t.map_fn(lambda v: t.reduce_sum(v), M),
    "map_fn_tuple_signature": lambda t: t.map_fn(lambda v: v[0] * v[1], (X, X), fn_output_signature="float32"),
    "map_fn_tuple_out": lambda t: t.map_fn(lambda v: (v, v * 2), X, fn_output_signature=("float32", "float32")),
    "map_fn_cast": lambda t: t.map_fn(lambda v: t.cast(v, "int32"), X, fn_output_signature="int32"),
    "map_fn_dtype_arg": lambda t: t.map_fn(lambda v: t.cast(v, "int32"), X, dtype="int32"),
    "map_fn_spec": lambda t: t.map_fn(lambda v: v * 2, X, fn_output_signature=t.TensorSpec([], "float32")),
    "map_fn_python_out": lambda t: t.map_fn(lambda v: 1.0, X),
    "map_fn_empty": lambda t: t.map_fn(lambda v: v * 2, np.zeros((0,), np.float32)),
    "foldl": lambda t: t.foldl(lambda a, v: a + v, X),
    "foldl_init": lambda t: t.foldl(lambda a, v: a * 2 + v, X, initializer=1.0),
    "foldl_python_int_init": lambda t: t.foldl(lambda a, v: a + v, X, initializer=0),
    "foldl_tuple": lambda t: t.foldl(lambda a, v: a + v[0] * v[1], (X, X), initializer=0.0),
    "foldl_empty": lambda t: t.foldl(lambda a, v: a + v, np.zeros((0,), np.float32), initializer=0.0),
    "foldr": lambda t: t.foldr(lambda a, v: a * 2 + v, X),
    "foldr_init": lambda t: t.foldr(lambda a, v: a * 2 + v, M, initializer=np.ones(2, np.float32)),
    "vectorized_map": lambda t: t.vectorized_map(lambda v: v * 2, X),
    "vectorized_map_tuple": lambda t: t.vectorized_map(lambda v: v[0] * v[1], (X, X)),
    "vectorized_map_list": lambda t: t.vectorized_map(lambda v: v[0] * v[1], [M, M]),
    "vectorized_map_constant": lambda t: t.vectorized_map(lambda v: 3.0, X),
}


@pytest.mark.parametrize("name", list(CASES))
def test_eager_results_match_tensorflow(name):
    _same(CASES[name](FFTF), CASES[name](tf))


ERRORS = {
    "cond_missing_fn": (lambda t: t.cond(True, None, lambda: 2), TypeError, "'true_fn' argument required"),
    "cond_not_callable": (lambda t: t.cond(True, 1, lambda: 2), TypeError, "'true_fn' must be callable"),
    "case_python_bool": (lambda t: t.case([(False, lambda: 1)], default=lambda: 3), TypeError, "must be a Tensor"),
    "case_none_true": (lambda t: t.case([(_c(t, False), lambda: 1), (_c(t, False), lambda: 2)]),
                       InvalidArgumentError, "None of conditions evaluated as True"),
    "case_exclusive_two_true": (lambda t: t.case([(_c(t, True), lambda: 1.0), (_c(t, True), lambda: 2.0)],
                                                 default=lambda: 0.0, exclusive=True),
                                InvalidArgumentError, "exclusive=True: more than 1 conditions"),
    "case_unordered_dict": (lambda t: t.case({1: lambda: 1}), ValueError, "Unordered dictionaries"),
    "switch_python_index": (lambda t: t.switch_case(1, [lambda: 1]), TypeError, "'branch_index' must be a Tensor"),
    "switch_float_index": (lambda t: t.switch_case(_c(t, 1.0), [lambda: 1]), TypeError, "integer Tensor"),
    "switch_no_branch": (lambda t: t.switch_case(_c(t, 0), []), ValueError, "at least one item"),
    "switch_gap": (lambda t: t.switch_case(_c(t, 0), {0: lambda: 1, 2: lambda: 2}), ValueError, "contiguous range"),
    "while_not_callable": (lambda t: t.while_loop(1, lambda i: i, [0]), TypeError, "'cond' must be callable"),
    "while_no_vars": (lambda t: t.while_loop(lambda: True, lambda: (), []), ValueError, "'loop_vars' must be"),
    "while_scalar_vars": (lambda t: t.while_loop(lambda i: i < 3, lambda i: i + 1, 0), ValueError, "'loop_vars'"),
    "while_structure": (lambda t: t.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), [0, 1.0]), ValueError,
                        "structure"),
    "scan_structure": (lambda t: t.scan(lambda a, v: (a[0] + v,), X, initializer=(0.0, 1.0)), ValueError,
                       "structure"),
    "scan_dtype": (lambda t: t.scan(lambda a, v: t.cast(a, "float32") + v, X, initializer=0), InvalidArgumentError,
                   "int32"),
    "scan_scalar": (lambda t: t.scan(lambda a, v: a + v, t.constant(X)[0], initializer=0.0), (ValueError, IndexError),
                    "1\\+ dimensional"),
    "map_fn_structure": (lambda t: t.map_fn(lambda v: v[0], (X, X)), ValueError, "structure"),
    "map_fn_dtype": (lambda t: t.map_fn(lambda v: t.cast(v, "int32"), X), InvalidArgumentError,
                     "TensorArray dtype is float32 but Op is trying to write dtype int32"),
    "map_fn_scalars": (lambda t: t.map_fn(lambda v: v, [1.0, 2.0]), ValueError, "1\\+ dimensional"),
    "map_fn_lengths": (lambda t: t.map_fn(lambda v: v[0], (X, X[:2])), ValueError, "Dimensions 4 and 2"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_are_tensorflows(name):
    call, kind, match = ERRORS[name]
    with pytest.raises(tf.errors.InvalidArgumentError if kind is InvalidArgumentError else kind):
        call(tf)
    with pytest.raises(kind, match=match):
        call(FFTF)


def test_foldl_without_initializer_over_nothing_is_an_error():
    with pytest.raises(InvalidArgumentError, match="Tried to read from index 0 but array size is: 0"):
        FFTF.foldl(lambda a, v: a + v, np.zeros((0,), np.float32))


GRADS = {
    "cond": lambda t, v: t.cond(t.reduce_sum(v) > 0, lambda: t.reduce_sum(v * v), lambda: t.reduce_sum(v)),
    "case": lambda t, v: t.case([(t.reduce_sum(v) < 0, lambda: t.reduce_sum(v)),
                                 (t.reduce_sum(v) > 0, lambda: t.reduce_sum(t.sin(v)))], default=lambda: 0.0),
    "switch_case": lambda t, v: t.switch_case(t.constant(1), [lambda: t.reduce_sum(v), lambda: t.reduce_sum(v ** 3)]),
    "while_loop": lambda t, v: t.reduce_sum(t.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, t.tanh(x * 1.5)),
                                                         [0, v])[1]),
    "scan": lambda t, v: t.reduce_sum(t.scan(lambda a, x: a * x + 1.0, v) ** 2),
    "scan_reverse_init": lambda t, v: t.reduce_sum(t.scan(lambda a, x: a * x, v, initializer=2.0, reverse=True)),
    "map_fn": lambda t, v: t.reduce_sum(t.map_fn(lambda x: x * x * 3.0, v)),
    "foldl": lambda t, v: t.foldl(lambda a, x: a * x + x, v),
    "foldr": lambda t, v: t.foldr(lambda a, x: a * t.sin(x), v, initializer=1.5),
    "vectorized_map": lambda t, v: t.reduce_sum(t.vectorized_map(lambda x: t.exp(x), v)),
    "scan_back_prop_ignored": lambda t, v: t.reduce_sum(t.scan(lambda a, x: a + x, v, back_prop=False)),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_match_tensorflow(name):
    value = np.array([0.5, -1.0, 1.5, 0.25], np.float32)
    ours, theirs = keras.Variable(value), tf.Variable(value)
    with FFTF.GradientTape() as tape:
        loss = GRADS[name](FFTF, ours)
    with tf.GradientTape() as ttape:
        tloss = GRADS[name](tf, theirs)
    np.testing.assert_allclose(np.asarray(loss), tloss.numpy(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, ours)), ttape.gradient(tloss, theirs).numpy(),
                               rtol=1e-5, atol=1e-6)


def _block(k, t, kind):
    """A layer of Keras module `k` whose call() runs TensorFlow module `t`'s `kind` with a scalar weight s."""

    class Block(k.layers.Layer):
        def build(self, input_shape):
            self.s = self.add_weight(shape=(), initializer="zeros", name="s")

        def call(self, x):  # x: (batch, 4, 3)
            s = self.s
            if kind == "cond":
                return t.cond(t.greater(s, 0.0), lambda: t.tanh(x * s), lambda: x - s * s)
            if kind == "case":
                return t.case([(t.greater(s, 0.5), lambda: x * s), (t.greater(s, 0.0), lambda: t.sin(x) + s)], default=lambda: x - s)
            if kind == "switch_case":
                index = t.cast(t.floor(s * 2.0), "int32")
                return t.switch_case(index, [lambda: x * s, lambda: t.sin(x) + s, lambda: x - s * 3.0])
            if kind == "while_loop":
                _, out = t.while_loop(lambda i, v: i * s < 2.5, lambda i, v: (i + 1.0, t.tanh(v * 1.5 + s)),
                                      [0.0, x], maximum_iterations=6)
                return out
            ts = t.transpose(x, (1, 0, 2))  # time steps first: (4, batch, 3)
            if kind == "scan":
                return t.transpose(t.scan(lambda a, xt: t.tanh(a * s + xt), ts), (1, 0, 2))
            if kind == "map_fn":
                return t.transpose(t.map_fn(lambda r: t.sin(r * s), ts), (1, 0, 2))
            if kind == "foldr":
                return t.foldr(lambda a, xt: a * s + xt, ts)
            raise AssertionError(kind)

    return Block()


@pytest.mark.parametrize("s", [0.7, -0.4])
@pytest.mark.parametrize("kind", ["cond", "case", "switch_case", "while_loop", "scan", "map_fn", "foldr"])
def test_a_layer_using_them_predicts_and_trains_as_tf_keras(kind, s, request):
    request.addfinalizer(config.reset)

    def model(k, t):
        inp = k.Input((4, 3))
        h = _block(k, t, kind)(k.layers.Dense(3, name="d1")(inp))
        return k.Model(inp, k.layers.Dense(2, name="d2")(k.layers.Flatten()(h)))

    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 4, 3)).astype("float32")
    y = rng.standard_normal((8, 2)).astype("float32")
    theirs = model(tf.keras, tf)
    weights = [w * 0.5 for w in theirs.get_weights()]
    weights[2] = np.float32(s)
    theirs.set_weights(weights)
    want = theirs.predict(x, verbose=0)
    theirs.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    theirs.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    config.set(data_parallel_degree=1)
    ours = model(keras, FFTF)
    ours.set_weights(weights)
    np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)
    ours.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    ours.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for got, w in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
