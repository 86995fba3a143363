"""keras.saving.serialize_keras_object / deserialize_keras_object write and read Keras 3's object format
(module, class_name, config, registered_name), and still read the short {class_name, config} form."""

import json

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import initializers, layers, regularizers

ser = keras.saving.serialize_keras_object
deser = keras.saving.deserialize_keras_object


@keras.saving.register_keras_serializable(package="FmtTest", name="KernelMult")
class _KernelMult(layers.Layer):
    def __init__(self, units=2, kernel_regularizer=None, inner=None, **kwargs):
        super().__init__(**kwargs)
        self.units, self.kernel_regularizer, self.inner = units, kernel_regularizer, inner

    def get_config(self):
        return {**super().get_config(), "units": self.units, "kernel_regularizer": self.kernel_regularizer,
                "inner": self.inner}


@keras.saving.register_keras_serializable(package="fmt_fns", name="squared")
def _squared(x):
    return x ** 2


def _keras3():
    """Keras 3 on the TensorFlow backend (the test peer), or a skip."""
    pytest.importorskip("tensorflow")
    k = pytest.importorskip("keras")
    if not k.__version__.startswith("3."):
        pytest.skip(f"the installed keras is {k.__version__}, not Keras 3")
    return k


def test_builtin_objects_have_the_keras3_envelope():
    assert ser(regularizers.L1(0.005)) == {"module": "keras.regularizers", "class_name": "L1",
                                           "config": {"l1": 0.005}, "registered_name": None}
    assert ser(initializers.Zeros()) == {"module": "keras.initializers", "class_name": "Zeros", "config": {},
                                         "registered_name": None}
    assert ser(keras.optimizers.SGD())["module"] == "keras.optimizers"
    assert ser(keras.losses.MeanSquaredError())["module"] == "keras.losses"
    assert ser(keras.mixed_precision.DTypePolicy("float32")) == {
        "module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": None}
    assert keras.utils.serialize_keras_object is ser


@pytest.mark.parametrize("obj", [regularizers.L1(0.005), regularizers.L1L2(l1=1e-5, l2=1e-4),
                                 initializers.GlorotUniform(seed=3), initializers.Ones(),
                                 keras.constraints.MaxNorm(2.0), keras.optimizers.Adam(learning_rate=0.01),
                                 keras.losses.MeanSquaredError(),
                                 keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9)],
                         ids=lambda o: type(o).__name__)
def test_builtin_round_trip(obj):
    config = ser(obj)
    again = deser(json.loads(json.dumps(config)))
    assert type(again) is type(obj)
    assert ser(again) == config


def test_registered_custom_layer_and_function():
    layer = _KernelMult(units=3, kernel_regularizer=regularizers.L1L2(l1=1e-5, l2=1e-4),
                        inner=_KernelMult(units=1))
    config = ser(layer)
    assert config["module"] == __name__ and config["class_name"] == "_KernelMult"
    assert config["registered_name"] == "FmtTest>KernelMult"
    assert config["config"]["kernel_regularizer"]["module"] == "keras.regularizers"
    assert config["config"]["inner"]["registered_name"] == "FmtTest>KernelMult"
    again = layers.deserialize(json.loads(json.dumps(config)))
    assert isinstance(again, _KernelMult) and again.units == 3
    assert keras.saving.get_registered_name(_KernelMult) == "FmtTest>KernelMult"

    fn = ser(_squared)
    assert fn == {"module": "builtins", "class_name": "function", "config": "fmt_fns>squared",
                  "registered_name": "function"}
    assert deser(fn) is _squared and keras.saving.get_registered_name(_squared) == "fmt_fns>squared"
    assert deser(ser(keras.activations.relu)) is keras.activations.relu
    dense = layers.Dense(2, activation=_squared)
    assert layers.Dense.from_config(dense.get_config()).activation is _squared


def test_unregistered_class_needs_custom_objects():
    class Local:
        def __init__(self, v=1):
            self.v = v

        def get_config(self):
            return {"v": self.v}

    config = ser(Local(4))
    assert config["registered_name"] == "Local" and config["module"] == __name__
    with pytest.raises(TypeError, match="register_keras_serializable"):
        deser(config)
    assert deser(config, custom_objects={"Local": Local}).v == 4


def test_values_nested_in_configs():
    assert ser([regularizers.L2(0.5), (1, 2)])[1] == (1, 2)
    assert ser({"a": initializers.Ones()})["a"]["class_name"] == "Ones"
    arr = ser(np.arange(3, dtype="float32"))
    assert arr == {"class_name": "__numpy__", "config": {"value": [0.0, 1.0, 2.0], "dtype": "float32"}}
    np.testing.assert_array_equal(deser(arr), np.arange(3, dtype="float32"))
    assert ser(np.float32(2.0)) == 2.0
    back = deser({"a": ser(initializers.Ones()), "b": 3})
    assert isinstance(back["a"], initializers.Ones) and back["b"] == 3
    assert deser("relu") == "relu"  # an unknown plain string comes back as it is (Keras 3)


def test_models_carry_build_and_compile_config():
    model = keras.Sequential([keras.Input((3,)), layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    config = ser(model)
    assert config["class_name"] == "Sequential" and config["build_config"] == {"input_shape": [None, 3]}
    assert config["compile_config"]["optimizer"]["class_name"] == "Adam"
    again = deser(json.loads(json.dumps(config)))
    assert isinstance(again, keras.Sequential) and again.output_shape == (None, 2)
    built = layers.Dense(2)
    built.build((None, 4))
    entry = ser(built)
    assert entry["build_config"] == {"input_shape": [None, 4]}
    assert deser(entry).built


def test_short_form_still_loads():
    """{"class_name", "config"}: Keras 2 / tf.keras and earlier flexflow_keras configs."""
    reg = deser({"class_name": "L1", "config": {"l1": 0.1}})
    assert isinstance(reg, regularizers.L1) and reg.l1 == 0.1
    assert regularizers.get({"class_name": "L1L2", "config": {"l1": 0.2, "l2": 0.3}}).l2 == 0.3
    assert isinstance(initializers.deserialize({"class_name": "HeUniform", "config": {"seed": 1}}),
                      initializers.HeUniform)
    dense = layers.deserialize({"class_name": "Dense", "config": {"units": 4, "kernel_initializer": {
        "class_name": "Ones", "config": {}}}})
    assert isinstance(dense, layers.Dense) and isinstance(dense.kernel_initializer, initializers.Ones)
    custom = deser({"class_name": "KernelMult", "config": {"units": 5}, "registered_name": "FmtTest>KernelMult"})
    assert custom.units == 5
    with pytest.raises(ValueError, match="Unknown regularizer"):
        regularizers.deserialize({"class_name": "NoSuch", "config": {}})


def test_same_dicts_as_keras3():
    k = _keras3()
    for ours, theirs in [(regularizers.L1L2(l1=0.5, l2=0.25), k.regularizers.L1L2(l1=0.5, l2=0.25)),
                         (initializers.Zeros(), k.initializers.Zeros()),
                         (keras.mixed_precision.DTypePolicy("float32"), k.DTypePolicy("float32"))]:
        assert ser(ours) == k.saving.serialize_keras_object(theirs)
    mine = ser(regularizers.L1(0.005))
    theirs = k.saving.serialize_keras_object(k.regularizers.L1(0.005))
    assert {key: v for key, v in mine.items() if key != "config"} == \
        {key: v for key, v in theirs.items() if key != "config"}
    assert mine["config"]["l1"] == pytest.approx(theirs["config"]["l1"])
    # what Keras 3 writes, we read
    assert isinstance(deser(k.saving.serialize_keras_object(k.regularizers.L2(0.5))), regularizers.L2)
    dense = deser(json.loads(json.dumps(k.saving.serialize_keras_object(k.layers.Dense(3, activation="relu")))))
    assert isinstance(dense, layers.Dense) and dense.units == 3
