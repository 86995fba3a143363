"""``KerasTensor != value`` is element-wise (ops.not_equal) in the functional API, as tf.keras 3.15's
KerasTensor.__ne__; ``==`` stays identity there in both. Deep Learning with Python 3rd ed. ch. 15 passes
``source_mask=source != 0`` to its TransformerEncoder, which indexes it (``source_mask[:, None, :]``): ours
gave the Python bool True, and the layer stopped with "'bool' object is not subscriptable"."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


@pytest.mark.parametrize("value", [0, 2.5, np.array([1, 0, 3], "int32")], ids=["int", "float", "array"])
def test_ne_outside_call_is_element_wise(value):
    for mod in (ff, keras_ref):
        x = mod.Input((3,), dtype="int32")
        ne = x != value
        assert isinstance(ne, mod.KerasTensor) and str(ne.dtype) == "bool" and tuple(ne.shape) == (None, 3)
        if not isinstance(value, np.ndarray):
            assert (x == value) is False  # identity, in both


def _masked_model(mod):
    class Encoder(mod.Layer):
        def __init__(self):
            super().__init__()
            self.attention = mod.layers.MultiHeadAttention(2, 2)

        def call(self, source, source_mask):
            mask = source_mask[:, None, :]
            return self.attention(query=source, key=source, value=source, attention_mask=mask)

    source = mod.Input(shape=(None,), dtype="int32")
    x = mod.layers.Embedding(10, 4)(source)
    out = Encoder()(source=x, source_mask=source != 0)
    return mod.Model(source, out)


def test_mask_from_ne_in_functional_model_matches_keras():
    ids = np.array([[1, 2, 0, 0], [3, 4, 5, 0]], "int32")
    ref = _masked_model(keras_ref)
    ours = _masked_model(ff)
    ours.set_weights(ref.get_weights())
    want = ref.predict(ids, verbose=0)
    got = ours.predict(ids, verbose=0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    mask_model = ff.Model(ours.input, ff.ops.cast(ours.input != 0, "int32"))
    np.testing.assert_array_equal(mask_model.predict(ids, verbose=0), (ids != 0).astype("int32"))
