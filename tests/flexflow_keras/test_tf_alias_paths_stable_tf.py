"""Paths of the `tensorflow` stand-in are one object each, as TensorFlow's modules and functions are:
``tf.random is tf.random``, and a function a script assigns (``tf.random.normal = fake``, a test's or a
harness' monkeypatch) is the one later calls reach. Before, every attribute access made a new proxy, so
the assignment was lost and the original ran."""

import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf


@pytest.mark.parametrize("make", [lambda: tf, lambda: keras_alias._TensorFlow("tensorflow")],
                         ids=["tensorflow", "ours"])
def test_paths_are_stable_and_assignments_stay(make):
    T = make()
    assert T.random is T.random and T.random.normal is T.random.normal
    assert T.nn is T.nn and T.math is T.math and T.data.Dataset is T.data.Dataset
    original = T.random.normal
    try:
        T.random.normal = lambda shape, *a, **k: ("fake", tuple(shape))
        assert T.random.normal(shape=(2, 3)) == ("fake", (2, 3))
    finally:
        T.random.normal = original
    assert T.random.normal is original
    assert tuple(T.random.normal((2, 3)).shape) == (2, 3)
