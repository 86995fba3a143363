"""keras.ops' branches, loops and scans called eagerly (ops/control_flow.py, ops/control_scan.py): each case,
written once as ``fn(ops)``, gives Keras 3's (TensorFlow backend) structure, Python-or-tensor leaves, dtypes and
values, or an error of Keras' class."""

import numpy as np
import pytest

from flexflow_keras import ops as ff_ops
from flexflow_keras import tree

A = np.arange(1, 6, dtype="float32")
M = np.linspace(-1, 1, 24, dtype="float32").reshape(4, 6)
I32 = np.arange(5, dtype="int32")

CASES = {
    "cond_python": lambda K: K.cond(True, lambda: 1, lambda: 2),
    "cond_numpy_bool": lambda K: K.cond(np.bool_(False), lambda: (1.5, [A]), lambda: (2.5, [A * 2])),
    "cond_tensor_pred": lambda K: K.cond(K.sum(K.convert_to_tensor(A)) > 3, lambda: K.sin(A), lambda: A),
    "switch": lambda K: K.switch(1, [lambda x: x + 1, lambda x: x * 2], A),
    "switch_clamped_high": lambda K: K.switch(5, [lambda x: x + 1, lambda x: x * 2], A),
    "switch_clamped_low": lambda K: K.switch(-3, [lambda x: x + 1, lambda x: x * 2], A),
    "switch_float_index": lambda K: K.switch(1.7, [lambda x: x + 1, lambda x: x * 2, lambda x: x], A),
    "switch_structure": lambda K: K.switch(0, [lambda x, y: {"a": x, "b": y}, lambda x, y: {"a": y, "b": x}], 1, A),
    "while": lambda K: K.while_loop(lambda i: i < 10, lambda i: i + 1, 0),
    "while_tuple": lambda K: K.while_loop(lambda x, y: x < 10, lambda x, y: (x + 1, y * 2.0), (0, 1.0)),
    "while_list": lambda K: K.while_loop(lambda x, y: x < 4, lambda x, y: [x + 1, y * 2.0], [0, A]),
    "while_maximum_iterations": lambda K: K.while_loop(lambda i: i < 10, lambda i: i + 1, 0, maximum_iterations=3),
    "while_maximum_iterations_0": lambda K: K.while_loop(lambda i: i < 10, lambda i: i + 1, 0, maximum_iterations=0),
    "while_dict": lambda K: K.while_loop(lambda d: d["a"] < 3, lambda d: {"a": d["a"] + 1, "b": d["b"] * 2.0},
                                         {"a": 0, "b": A}),
    "while_int_to_float": lambda K: K.while_loop(lambda x: x < 3, lambda x: x + 1.5, 0),
    "fori": lambda K: K.fori_loop(0, 10, lambda i, s: s + i, 0),
    "fori_tensor_state": lambda K: K.fori_loop(1, 4, lambda i, s: K.sin(s) * i, A),
    "fori_structure": lambda K: K.fori_loop(0, 3, lambda i, s: (s[0] + i, s[1] * 2.0), (0, 1.0)),
    "fori_empty_range": lambda K: K.fori_loop(5, 2, lambda i, s: s + i, 0),
    "scan": lambda K: K.scan(lambda c, x: (c + x, c * x), np.float32(0), A),
    "scan_reverse": lambda K: K.scan(lambda c, x: (c * 0.5 + x, c), np.float32(1), A, reverse=True),
    "scan_length": lambda K: K.scan(lambda c, x: (c + 1.0, c), 0.0, length=3),
    "scan_length_and_xs": lambda K: K.scan(lambda c, x: (c + x, c), np.float32(0), A, length=5),
    "scan_unroll": lambda K: K.scan(lambda c, x: (c + x, c), np.float32(0), A, unroll=True),
    "scan_matrix_rows": lambda K: K.scan(lambda c, x: (K.tanh(c + x), c * 2.0), np.zeros(6, "float32"), M),
    "scan_structure": lambda K: K.scan(lambda c, x: ((c[0] + x["a"], c[1] * x["b"]), (c[1], c[0])),
                                       (np.float32(0), np.float32(1)), {"a": A, "b": A * 0.5}),
    "map": lambda K: K.map(lambda x: x ** 2, I32),
    "map_dict_out": lambda K: K.map(lambda x: {"y1": x ** 2, "y2": x * 10}, I32),
    "map_rows": lambda K: K.map(lambda r: K.sum(r) * r, M),
    "map_tuple_in": lambda K: K.map(lambda x: x[0] * x[1], (A, A + 1)),
    "vectorized_map": lambda K: K.vectorized_map(lambda x: x * 2, M),
    "vectorized_map_list": lambda K: K.vectorized_map(lambda xs: xs[0] + xs[1], [M, M * 3]),
    "vectorized_map_dict_out": lambda K: K.vectorized_map(lambda x: {"a": x, "b": K.sum(x)}, M),
    "associative_scan": lambda K: K.associative_scan(lambda x, y: x + y, I32),
    "associative_scan_reverse": lambda K: K.associative_scan(lambda x, y: x + y, A, reverse=True),
    "associative_scan_list": lambda K: K.associative_scan(lambda x, y: [x[0] + y[0], x[1] * y[1]], [I32, A]),
    "associative_scan_axis1": lambda K: K.associative_scan(lambda x, y: x + y, M, axis=1),
    "associative_scan_negative_axis": lambda K: K.associative_scan(lambda x, y: x * y + 0.1, M, axis=-1),
    # long float sums round as TensorFlow's recursion does (not as a running sum)
    "associative_scan_long": lambda K: K.associative_scan(lambda x, y: x + y, np.linspace(0.1, 3.3, 37,
                                                                                          dtype="float32")),
    "associative_scan_one": lambda K: K.associative_scan(lambda x, y: x + y, A[:1]),
}

ERRORS = {
    "switch_no_branches": lambda K: K.switch(0, [], 1),
    "while_body_structure": lambda K: K.while_loop(lambda x, y: x < 3, lambda x, y: (x + 1,), (0, 1)),
    "fori_body_structure": lambda K: K.fori_loop(0, 2, lambda i, s: (s,), 0.0),
    "scan_nothing": lambda K: K.scan(lambda c, x: (c, c), 0.0),
    "scan_unroll_0": lambda K: K.scan(lambda c, x: (c, c), 0.0, A, unroll=0),
    "scan_length_mismatch": lambda K: K.scan(lambda c, x: (c + x, c), np.float32(0), A, length=2),
    "associative_scan_sizes": lambda K: K.associative_scan(lambda x, y: [x[0] + y[0], x[1] + y[1]], [A, A[:4]]),
}
TYPE_ERRORS = {
    "scan_not_callable": lambda K: K.scan(3, 0.0, A),
    "associative_scan_not_callable": lambda K: K.associative_scan(3, A),
}


def _leaves(result):
    """(path, kind, dtype, value) of each leaf: Python values by type, tensors by dtype."""
    out = []
    for path, v in tree.flatten_with_path(result):
        if v is None or isinstance(v, bool | int | float):
            out.append((path, type(v).__name__, None, v))
        else:
            arr = np.asarray(v)
            out.append((path, "tensor", str(arr.dtype), arr))
    return out


@pytest.fixture(scope="module")
def keras_ops():
    pytest.importorskip("tensorflow")
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("Keras 3 is not on its TensorFlow backend")
    return keras.ops


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_call_gives_keras_result(name, keras_ops):
    want, got = CASES[name](keras_ops), CASES[name](ff_ops)
    tree.assert_same_structure(got, want)
    assert type(got) is type(want) or not tree.is_nested(want), (type(got), type(want))
    for (gp, gk, gd, gv), (wp, wk, wd, wv) in zip(_leaves(got), _leaves(want), strict=True):
        assert (gp, gk, gd) == (wp, wk, wd), name
        if gk == "tensor":
            assert hasattr(gv, "shape") and gv.shape == wv.shape, name
            np.testing.assert_allclose(gv, wv, rtol=1e-6, atol=0, err_msg=name)
        else:
            assert gv == wv, name


def test_tensors_out_answer_numpy():
    assert ff_ops.while_loop(lambda i: i < 3, lambda i: i + 1, 0).numpy() == 3
    carry, ys = ff_ops.scan(lambda c, x: (c + x, {"c": c}), np.float32(0), A)
    assert carry.numpy() == 15 and ys["c"].numpy().tolist() == [0, 1, 3, 6, 10]
    assert ff_ops.map(lambda x: {"y": x}, A)["y"].numpy().dtype == np.float32


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_eager_errors_are_keras_value_errors(name, keras_ops):
    with pytest.raises(ValueError):
        ERRORS[name](keras_ops)
    with pytest.raises(ValueError):
        ERRORS[name](ff_ops)


@pytest.mark.parametrize("name", sorted(TYPE_ERRORS))
def test_eager_errors_are_keras_type_errors(name, keras_ops):
    with pytest.raises(TypeError):
        TYPE_ERRORS[name](keras_ops)
    with pytest.raises(TypeError, match="callable"):
        TYPE_ERRORS[name](ff_ops)


def test_scan_outputs_follow_f_not_the_carry():
    """JAX's rule (TensorFlow's Keras requires ys shaped as the carry): ys of another shape, and None."""
    carry, ys = ff_ops.scan(lambda c, x: (c + x, x[0]), np.zeros(2, "float32"), M[:, :2])
    np.testing.assert_allclose(ys, M[:, 0])
    carry, ys = ff_ops.scan(lambda c, x: (c + x, None), np.zeros(2, "float32"), M[:, :2])
    assert ys is None
    np.testing.assert_allclose(carry, M[:, :2].sum(0), rtol=1e-6)


def test_loops_over_nothing_keep_f_output_structure():
    carry, ys = ff_ops.scan(lambda c, x: (c + x, {"y": x * 2}), np.float32(1), np.zeros((0,), "float32"))
    assert float(carry) == 1 and ys["y"].shape == (0,) and ys["y"].dtype == np.float32
    assert ff_ops.map(lambda x: x[:2], np.zeros((0, 3), "int32")).shape == (0, 2)
