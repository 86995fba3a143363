"""tf.keras 2's `keras.experimental` schedules (flexflow_keras/experimental.py): keras.io's simsiam builds
``tf.keras.experimental.CosineDecay(initial_learning_rate=0.03, decay_steps=steps)``, which stopped with
"module 'flexflow_keras' has no attribute 'experimental'" (TensorFlow 2.21's Keras 3 has no such module
either). The schedules are Keras 3's own classes, compared here with keras.optimizers.schedules of
tf.keras 3.15; the removed members are a clear error."""

import importlib

import numpy as np
import pytest

import flexflow_keras as ffk
from flexflow_keras import keras_alias

keras = pytest.importorskip("keras")

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


@pytest.mark.parametrize("name, kwargs", [
    ("CosineDecay", {"initial_learning_rate": 0.03, "decay_steps": 10, "alpha": 0.1}),
    ("CosineDecay", {"initial_learning_rate": 0.1, "decay_steps": 8, "warmup_target": 0.2, "warmup_steps": 4}),
    ("CosineDecayRestarts", {"initial_learning_rate": 0.05, "first_decay_steps": 5, "t_mul": 2.0, "m_mul": 0.5}),
])
def test_schedules_as_keras_3(name, kwargs):
    ours = getattr(ffk.experimental, name)(**kwargs)
    assert type(ours) is getattr(ffk.optimizers.schedules, name)
    assert type(getattr(FFTF.keras.experimental, name)(**kwargs)) is type(ours)  # tf.keras.experimental.X
    theirs = getattr(keras.optimizers.schedules, name)(**kwargs)
    steps = range(0, 25, 3)
    np.testing.assert_allclose([float(ours(s)) for s in steps], [float(theirs(s)) for s in steps], rtol=1e-6)


def test_import_path_and_removed_members():
    mod = importlib.import_module("flexflow_keras.experimental")
    assert mod.CosineDecay is ffk.optimizers.schedules.CosineDecay
    with pytest.raises(AttributeError, match="WideDeepModel is tf.keras 2 API that Keras 3 removed"):
        ffk.experimental.WideDeepModel  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        ffk.experimental.Nope  # noqa: B018
