"""`dir()` of keras.initializers, keras.activations and keras.optimizers.schedules lists what tf.keras 3.15
lists. Hands-On ML ch11 prints ``[name for name in dir(keras.initializers) if not name.startswith("_")]``
and each schedule class's docstring by walking ``dir(tf.keras.optimizers.schedules)``; ours listed the
modules' imports (collections.abc's Sequence came out as a schedule) and lacked Keras' aliases
IdentityInitializer, OrthogonalInitializer, STFTInitializer and stft."""

import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


def _public(module):
    return sorted(n for n in dir(module) if not n.startswith("_"))


@pytest.mark.parametrize("path", ["initializers", "activations", "optimizers.schedules"])
def test_dir_lists_what_tf_keras_lists(path):
    ours, theirs = ff, keras_ref
    for part in path.split("."):
        ours, theirs = getattr(ours, part), getattr(theirs, part)
    assert _public(ours) == _public(theirs)
    for name in _public(ours):
        assert getattr(ours, name) is not None


def test_initializer_aliases_as_tf_keras():
    for name in ("IdentityInitializer", "OrthogonalInitializer", "STFTInitializer"):
        assert getattr(ff.initializers, name).__name__ == getattr(keras_ref.initializers, name).__name__
    assert ff.initializers.stft is ff.initializers.STFT


def test_schedules_walk_of_the_notebook():
    lines = []
    for name in sorted(dir(ff.optimizers.schedules)):
        if name[0] == name[0].lower():
            continue
        lines.append(name + " " + getattr(ff.optimizers.schedules, name).__doc__.splitlines()[0][:0])
    assert [s.strip() for s in lines] == [n for n in _public(keras_ref.optimizers.schedules) if n[0].isupper()]
