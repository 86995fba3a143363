"""EinsumDense: Keras 3's equation analysis (kernel, bias and output shapes, "...", bias axes), its errors,
the projection forms running as one ProjectionOp, config round trips, and against tf.keras: outputs on
copied weights, a few Adam steps of fit, and .keras files both ways."""

import numpy as np
import pytest
from ff_layer_harness import make_data, tf_keras

import flexflow_keras as ff
from flexflow_keras import layers
from flexflow_keras.ops.einsum_dense import ProjectionOp

# (equation, output_shape, bias_axes, activation, per-sample input shape)
CASES = [
    ("ab,bc->ac", 4, "c", None, (3,)),  # Dense
    ("abc,cd->abd", (None, 5), "d", "relu", (4, 3)),  # a sequence, None for the shared dim
    ("...b,bc->...c", 5, "c", "tanh", (3, 2, 4)),  # left ellipsis over two dims
    ("abc,cde->abde", (None, 2, 3), "de", None, (5, 4)),  # MultiHeadAttention's query projection
    ("abcd,cde->abe", (None, 6), "e", "sigmoid", (5, 2, 3)),  # and its output projection
    ("abc,cd->abd", (4, 3), "b", None, (4, 2)),  # bias on a non-trailing axis: (4, 1)
    ("abc,cde->abde", (None, 2, 3), "d", "gelu", (5, 4)),  # bias on part of the kernel's output dims
    ("ab...,bc->ac...", 7, "c", None, (5, 3, 2)),  # right ellipsis: bias (7, 1, 1)
    ("abc,bd->adc", (6, 3), "dc", "relu", (4, 3)),  # a general einsum (contracts a middle dim)
    ("abc,cd->abd", (None, 3), None, None, (4, 2)),  # no bias
]


def _ids(case):
    return f"{case[0]}|{case[2]}"


def _layer(lib, case, **kw):
    eq, out, bias, act, _ = case
    return lib.layers.EinsumDense(eq, output_shape=out, bias_axes=bias, activation=act, **kw)


def _model(lib, case, **kw):
    inp = lib.Input(case[4])
    return lib.Model(inp, _layer(lib, case, **kw)(inp))


def _random_weights(model, seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(w.shape) * 0.5).astype("float32") for w in model.get_weights()]


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_shapes_graph_eager_and_config(case):
    model = _model(ff, case)
    layer = model.layers[-1]
    model.set_weights(_random_weights(model))
    x = make_data((3,) + case[4])
    y = model.predict(x, verbose=0)
    assert y.shape[1:] == tuple(model.outputs[0].shape[1:]) == layer.compute_output_shape((None,) + case[4])[1:]
    np.testing.assert_allclose(layer(x), y, rtol=1e-5, atol=1e-6)
    clone = layers.EinsumDense.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    clone(x)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(x), y, rtol=1e-5, atol=1e-6)
    assert [w.name for w in layer.weights] == ["kernel", "bias"][:len(layer.weights)]


def test_projections_run_as_one_projection_op():
    x = layers.Input((5, 4))
    y = layers.EinsumDense("abc,cde->abde", (None, 2, 3), bias_axes="de")(x)
    assert isinstance(y.node.op, ProjectionOp) and y.node.op.n_contract == 1 and len(y.node.weights) == 2
    z = layers.EinsumDense("abcd,cde->abe", (None, 6), bias_axes="e")(y)
    assert isinstance(z.node.op, ProjectionOp) and z.node.op.n_contract == 2
    part = layers.EinsumDense("abc,cde->abde", (None, 2, 3), bias_axes="d")(x)  # bias (2, 1): added after
    assert part.node.op.type_name == "add" and isinstance(part.node.inputs[0].node.op, ProjectionOp)


def test_variance_scaling_counts_fans_over_the_einsum_axes():
    layer = layers.EinsumDense("abc,cde->abde", (None, 8, 16), kernel_initializer=ff.initializers.GlorotUniform(3))
    layer(layers.Input((5, 32)))
    k = layer.get_weights()[0]
    limit = np.sqrt(6.0 / (32 + 8 * 16))  # fan_in 32, fan_out 128 (not the conv rule's 256 and 512)
    assert np.abs(k).max() <= limit and np.abs(k).max() > 0.95 * limit


@pytest.mark.parametrize("kwargs,shape,message", [
    (dict(equation="ab,bc->ad", output_shape=3), (4,), r"Dimension 'd' was specified in the output 'ad'"),
    (dict(equation="ab,bcd->ac", output_shape=3), (4,), r"Weight dimension 'd' did not have a match"),
    (dict(equation="ab,bc->ac", output_shape=3, bias_axes="x"), (4,), r"Bias dimension 'x' was requested"),
    (dict(equation="abc,cd->abd", output_shape=(7, 3)), (4, 2),
     r"do not match at shared dimension 'b'\. Input shape is 4"),
    (dict(equation="abc,cd->abd", output_shape=(None, 3), bias_axes="b"), (4, 2), r"bias's dim 'b' has no known size"),
    (dict(equation="abc,cd->abd", output_shape=3), (4, 2), r"output_shape=\(3,\) is too short"),
    (dict(equation="ab,bc->ac", output_shape=3), (4, 2), r"expects inputs of exactly rank 2.*\(None, 4, 2\)"),
    (dict(equation="abc,cd->bad", output_shape=(None, 3)), (4, 2), r"batch\) dim 'a' away from the front"),
])
def test_errors_name_the_layer_and_the_problem(kwargs, shape, message):
    layer = layers.EinsumDense(**kwargs, name="proj")
    with pytest.raises((ValueError, ff.errors.ShapeError), match=message) as info:
        layer(layers.Input(shape))
    assert "EinsumDense 'proj'" in str(info.value)


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"EinsumDense 'e': Invalid einsum equation 'ab,bc'\. Equations must be"):
        layers.EinsumDense("ab,bc", 3, name="e")
    with pytest.raises(ValueError, match=r"Invalid einsum equation 'ab\.\.\.c,cd->abd'"):
        layers.EinsumDense("ab...c,cd->abd", 3)
    with pytest.raises(ValueError, match=r"lora_rank=4 \(LoRA fine-tuning\) is not supported"):
        layers.EinsumDense("ab,bc->ac", 3, lora_rank=4)
    with pytest.raises(ValueError, match=r"expects output_shape to be a positive integer.*output_shape='3'"):
        layers.EinsumDense("ab,bc->ac", "3")
    with pytest.raises(ValueError, match=r"bias_axes to be a string"):
        layers.EinsumDense("ab,bc->ac", 3, bias_axes=1)


# --- against tf.keras -----------------------------------------------------------------------------------------
@pytest.fixture
def tk():
    keras3 = tf_keras()
    if keras3 is None:
        pytest.skip("TensorFlow is not installed")
    return keras3


@pytest.mark.tf
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_weights_and_outputs_match_tf_keras(tk, case):
    ours, theirs = _model(ff, case), _model(tk, case)
    assert [w.shape for w in ours.get_weights()] == [tuple(w.shape) for w in theirs.get_weights()]
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    weights = _random_weights(ours)
    ours.set_weights(weights)
    theirs.set_weights(weights)
    x = make_data((3,) + case[4], seed=2)
    want = np.asarray(theirs(x))
    np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours.layers[-1](x), want, rtol=1e-5, atol=1e-5)
    mine, config = ours.layers[-1].get_config(), theirs.layers[-1].get_config()
    assert set(mine) <= set(config)
    for key in ("equation", "bias_axes", "activation", "activity_regularizer", "kernel_regularizer",
                "bias_constraint"):
        assert mine[key] == config[key], key
    assert mine["output_shape"] == tuple(config["output_shape"])


@pytest.mark.tf
@pytest.mark.parametrize("case", [CASES[1], CASES[3], CASES[5], CASES[7], CASES[8]], ids=_ids)
def test_adam_fit_matches_tf_keras(tk, case):
    def build(lib):
        inp = lib.Input(case[4])
        h = _layer(lib, case)(inp)
        return lib.Model(inp, lib.layers.Dense(2)(h))  # (Keras' own output shape may hold None: no Flatten)

    ours, theirs = build(ff), build(tk)
    start = _random_weights(ours)
    ours.set_weights(start)
    theirs.set_weights(start)
    x, y = make_data((16,) + case[4], seed=3), make_data((16,) + tuple(ours.outputs[0].shape[1:]), seed=4)
    ours.compile(optimizer=ff.optimizers.Adam(0.01), loss="mse")
    theirs.compile(optimizer=tk.optimizers.Adam(0.01), loss="mse")
    ff.config.set(only_data_parallel=True)
    try:
        got = ours.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    finally:
        ff.config.reset()
    want = theirs.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.tf
@pytest.mark.parametrize("case", [CASES[2], CASES[6], CASES[7]], ids=_ids)
def test_keras_files_interchange_with_tf_keras(tk, tmp_path, case):
    x = make_data((3,) + case[4], seed=5)
    theirs = _model(tk, case, kernel_regularizer="l2")
    theirs.set_weights(_random_weights(theirs))
    theirs.save(tmp_path / "tf.keras")
    ours = ff.models.load_model(tmp_path / "tf.keras")
    for a, b in zip(theirs.get_weights(), ours.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(ours.predict(x, verbose=0), np.asarray(theirs(x)), rtol=1e-5, atol=1e-5)
    ours.set_weights(_random_weights(ours, seed=7))
    ours.save(tmp_path / "ours.keras")
    back = tk.models.load_model(tmp_path / "ours.keras")
    assert back.layers[-1].get_config()["equation"] == case[0]
    for a, b in zip(ours.get_weights(), back.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.asarray(back(x)), ours.predict(x, verbose=0), rtol=1e-5, atol=1e-5)
