"""Inside a layer's call(), ``x == value`` and ``x != value`` are element-wise, as on the backend tensors
Keras 3 hands call() (keras.io's mixed-dimension embedding: ``tf.cast(ids == block, "float32")`` was the
constant False and zeroed the embeddings); outside a call, and between two KerasTensors, a KerasTensor
compares by identity, as Keras'."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, ops
from flexflow_keras.errors import GraphError


class Masks(keras.layers.Layer):
    def call(self, ids):
        eq = ops.cast(ids == 2, "float32")
        ne = ops.cast(ids != 2, "float32")
        assert ids in [ids] and not (ids == ops.add(ids, 0))  # another KerasTensor: identity
        return ops.stack([eq, ne], axis=-1)


def test_comparisons_in_call_are_element_wise(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp = keras.Input((3,), dtype="int32")
    model = keras.Model(inp, Masks()(inp))
    ids = np.array([[1, 2, 3], [2, 2, 0]], "int32")
    out = model.predict(ids, verbose=0)
    np.testing.assert_array_equal(out[..., 0], ids == 2)
    np.testing.assert_array_equal(out[..., 1], ids != 2)


def test_outside_a_call_identity():
    a = keras.Input((3,))
    assert (a == 1) is False and a == a and {a: 1}[a] == 1
    ne = a != 1  # Keras 3.15's KerasTensor.__ne__ is ops.not_equal outside a call too (test_keras_tensor_ne_tf.py)
    assert isinstance(ne, keras.KerasTensor) and str(ne.dtype) == "bool"


def test_none_and_strings_compare_by_identity_inside_call():
    seen = {}

    class Probe(keras.layers.Layer):
        def call(self, x):
            seen["none"] = x == None  # noqa: E711 - what a layer's own code may write
            seen["name"] = x != "ids"
            seen["member"] = x in ["a", None]
            return x

    inp = keras.Input(shape=(3,))
    keras.Model(inp, Probe()(inp))
    assert seen == {"none": False, "name": True, "member": False}


def test_a_string_tensor_against_a_string_is_element_wise_inside_call():
    """keras.io's feature-engineering layer: ``tf.cast(inputs["thal"] == "fixed", tf.float32)``. By identity
    it was a Python False, cast to a 0-d constant: a Concatenate rank error, or, added to a feature, a
    silent constant. Element-wise (TensorFlow's), the model names the real limit: strings in the graph."""
    seen = {}

    class Features(keras.layers.Layer):
        def call(self, inputs):
            fixed = inputs["thal"] == "fixed"
            seen["eq"], seen["ne"] = fixed, inputs["thal"] != "normal"
            return ops.concatenate([ops.cast(fixed, "float32"), inputs["age"]], axis=-1)

    inputs = {"thal": keras.Input((1,), dtype="string", name="thal"), "age": keras.Input((1,), name="age")}
    outputs = keras.layers.Dense(1)(Features()(inputs))
    assert [(t.shape, str(t.dtype)) for t in (seen["eq"], seen["ne"])] == [((None, 1), "bool")] * 2
    with pytest.raises(GraphError, match="input 'thal' holds strings"):
        keras.Model(inputs, outputs)
