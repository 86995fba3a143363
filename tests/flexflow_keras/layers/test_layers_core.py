"""Dense, Activation, Dropout, Flatten, Reshape, Permute, Embedding, Lambda through the layer harness."""

import numpy as np
import pytest
from ff_layer_harness import make_data, run_layer_test

from flexflow_keras import backend, layers, models, ops, regularizers
from flexflow_keras.errors import ShapeError


@pytest.mark.parametrize("activation", [None, "relu", "tanh", "sigmoid", "softmax", "elu", "gelu"])
def test_dense(activation, parity):
    run_layer_test(layers.Dense, dict(units=5, activation=activation), input_shape=(4, 3),
                   expected_output_shape=(None, 5), expected_num_weights=2, expected_num_trainable=2,
                   compare_tf=parity, tf_layer="Dense")


def test_dense_no_bias_and_3d_input(parity):
    run_layer_test(layers.Dense, dict(units=2, use_bias=False), input_shape=(3, 4, 6),
                   expected_output_shape=(None, 4, 2), expected_num_weights=1, compare_tf=parity, tf_layer="Dense")


DENSE_OP = type(ops.dense(layers.Input((2,)), np.ones((2, 2), "float32")).node.op)
SOFTMAX_OP = type(ops.softmax(layers.Input((2,))).node.op)


def test_dense_softmax_is_a_separate_op():
    x = layers.Input((3,))
    y = layers.Dense(4, activation="softmax")(x)
    assert type(y.node.op) is SOFTMAX_OP
    assert type(y.node.inputs[0].node.op) is DENSE_OP and y.node.inputs[0].node.op.activation == "linear"


def test_dense_fuses_elementwise_activation():
    x = layers.Input((3,))
    y = layers.Dense(4, activation="relu")(x)
    assert type(y.node.op) is DENSE_OP and y.node.op.activation == "relu"
    assert y.node.layer.name == "dense"


def test_dense_custom_activation_function_is_composed():
    x = layers.Input((3,))
    layer = layers.Dense(4, activation=lambda t: ops.multiply(t, 2.0))
    y = layer(x)
    assert type(y.node.op) is not DENSE_OP
    data = make_data((2, 3))
    ref = data @ layer.kernel.numpy() * 2.0
    np.testing.assert_allclose(layer(data), ref, rtol=1e-6, atol=1e-6)


def test_dense_errors_name_the_layer_and_the_fix():
    with pytest.raises(ValueError, match=r"Dense 'fc1' expects a positive integer for units, received units=0"):
        layers.Dense(0, name="fc1")
    layer = layers.Dense(10, name="dense_1")
    layer(np.zeros((2, 784), "float32"))
    with pytest.raises(ShapeError, match=r"Input 0 of layer 'dense_1' is incompatible: expected last dim 784, "
                                         r"got shape \(32, 28, 28\)\. Add Flatten\(\) before it\?"):
        layer(np.zeros((32, 28, 28), "float32"))
    with pytest.raises(ValueError, match="Unrecognized keyword arguments passed to Dense"):
        layers.Dense(3, foo=1)
    with pytest.raises(ValueError, match="Unknown activation 'relux'"):
        layers.Dense(3, activation="relux")


def test_dense_regularizer_and_constraint_reach_the_variables():
    layer = layers.Dense(3, kernel_regularizer=regularizers.l2(0.1), kernel_constraint="non_neg")
    layer(np.ones((1, 2), "float32"))
    assert isinstance(layer.kernel.regularizer, regularizers.L2) and layer.kernel.regularizer.l2 == 0.1
    assert layer.kernel.constraint is not None and layer.bias.regularizer is None
    assert layer.losses and layer.losses[0] == pytest.approx(0.1 * float(np.sum(layer.kernel.numpy() ** 2)))
    clone = layers.Dense.from_config(layer.get_config())
    assert isinstance(clone.kernel_regularizer, regularizers.L2)


@pytest.mark.parametrize("name", ["relu", "softmax", "tanh", "sigmoid", "softplus", "selu", "linear"])
def test_activation(name, parity):
    run_layer_test(layers.Activation, dict(activation=name), input_shape=(3, 5), expected_output_shape=(None, 5),
                   compare_tf=parity, tf_layer="Activation")


def test_dropout_inference_is_identity_and_training_drops(parity):
    layer, out, (data,) = run_layer_test(layers.Dropout, dict(rate=0.5, seed=3), input_shape=(64, 32),
                                         expected_output_shape=(None, 32), compare_tf=parity, tf_layer="Dropout")
    np.testing.assert_array_equal(out, data)
    ones = np.ones((256, 64), "float32")
    y = layer(ones, training=True)
    dropped = float(np.mean(y == 0))
    assert 0.4 < dropped < 0.6
    np.testing.assert_allclose(y[y != 0], 2.0, rtol=1e-6)
    assert layer.get_config()["seed"] == 3


def test_dropout_rate_is_validated():
    with pytest.raises(ValueError, match=r"Dropout 'd' expects rate"):
        layers.Dropout(1.5, name="d")
    with pytest.raises(ValueError, match=r"Dropout 'e' expects rate in \[0, 1\)"):
        layers.Dropout(1.0, name="e")


def test_flatten(parity):
    run_layer_test(layers.Flatten, {}, input_shape=(2, 3, 4, 5), expected_output_shape=(None, 60), compare_tf=parity, tf_layer="Flatten")


def test_flatten_channels_first_moves_channels_last_like_keras(parity):
    run_layer_test(layers.Flatten, dict(data_format="channels_first"), input_shape=(2, 3, 4, 5),
                   expected_output_shape=(None, 60), compare_tf=parity, tf_layer="Flatten")


def test_reshape_with_minus_one_and_errors(parity):
    run_layer_test(layers.Reshape, dict(target_shape=(-1, 4)), input_shape=(2, 3, 8), expected_output_shape=(None, 6, 4),
                   compare_tf=parity, tf_layer="Reshape")
    with pytest.raises(ShapeError, match=r"Reshape 'r' cannot reshape samples of shape \(3, 8\) \(24 values\) to \(5, 5\)"):
        layers.Reshape((5, 5), name="r")(layers.Input((3, 8)))
    with pytest.raises(ValueError, match="at most one -1"):
        layers.Reshape((-1, -1))


def test_permute(parity):
    run_layer_test(layers.Permute, dict(dims=(2, 1)), input_shape=(2, 3, 4), expected_output_shape=(None, 4, 3),
                   compare_tf=parity, tf_layer="Permute")
    with pytest.raises(ValueError, match="permutation of 1..2"):
        layers.Permute((0, 1))


def test_embedding(parity):
    layer, out, (ids,) = run_layer_test(layers.Embedding, dict(input_dim=20, output_dim=4), input_shape=(3, 5),
                                        input_dtype="int32", expected_output_shape=(None, 5, 4),
                                        expected_num_weights=1, compare_tf=parity, tf_layer="Embedding")
    np.testing.assert_array_equal(out, layer.embeddings.numpy()[ids])
    # float ids (Input's default dtype) are cast to integers, as Keras does
    np.testing.assert_array_equal(layer(ids.astype("float32")), out)
    x = layers.Input((5,))
    assert layer(x).shape == (None, 5, 4)


def test_embedding_accepts_initial_weights_and_keras2_arguments():
    table = np.arange(12, dtype="float32").reshape(6, 2)
    layer = layers.Embedding(6, 2, weights=[table], input_length=3)
    np.testing.assert_array_equal(layer(np.array([[0, 5]])), table[[[0, 5]]])


def test_lambda():
    layer = layers.Lambda(lambda t: ops.multiply(t, 3.0))
    x = layers.Input((2,))
    y = layer(x)
    assert y.shape == (None, 2)
    np.testing.assert_allclose(models.Model(x, y)(np.ones((1, 2), "float32")), 3.0)


def test_names_are_unique_and_reset_by_clear_session():
    assert [layers.Dense(1).name for _ in range(3)] == ["dense", "dense_1", "dense_2"]
    assert layers.BatchNormalization().name == "batch_normalization"
    assert layers.Conv2D(1, 1).name == "conv2d"
    assert layers.GlobalAveragePooling2D().name == "global_average_pooling2d"
    backend.clear_session()
    assert layers.Dense(1).name == "dense"
