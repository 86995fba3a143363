"""The miniature-GPT causal mask under the runner (keras.io's text_generation_with_miniature_gpt):
``tf.tile(mask, tf.concat([tf.expand_dims(tf.shape(x)[0], -1), tf.constant([1, 1])], 0))`` on a mask made of
known sizes. The multiples are an eager object array holding the batch dim; iterating it wrapped that
BatchDim in a NumPy-scalar subclass whose reference was the BatchDim itself, and the tile stopped
("fill: a shape (None, 1, 1) with a None batch needs the tensor it takes the batch from")."""

import numpy as np

import flexflow_keras as keras
from flexflow_keras import config, layers
from flexflow_keras.ops.eager_tensor import eager, eager_scalar
from flexflow_keras.tf_compat import mapped_call

tf_ = {n: mapped_call(f"tf.{n}") for n in ("shape", "range", "cast", "reshape", "concat", "expand_dims",
                                            "constant", "tile")}


def causal_mask(batch_size, n):
    i = tf_["range"](n)[:, None]
    j = tf_["range"](n)
    mask = tf_["reshape"](tf_["cast"](i >= j, "bool"), [1, n, n])
    mult = tf_["concat"]([tf_["expand_dims"](batch_size, -1), tf_["constant"]([1, 1], dtype="int32")], 0)
    return tf_["tile"](mask, mult)


class MaskedSelfAttention(layers.Layer):
    def __init__(self):
        super().__init__()
        self.att = layers.MultiHeadAttention(2, 4)

    def call(self, x):
        shape = tf_["shape"](x)
        return self.att(x, x, attention_mask=causal_mask(shape[0], shape[1]))


def test_object_array_items_are_themselves():
    marker = object()
    items = list(eager(np.array([marker, 1, 2], dtype=object)))
    assert items[0] is marker and items[1:] == [1, 2] and type(items[1]) is int
    assert eager_scalar(np.int32(3)).numpy() == 3  # NumPy scalars still answer .numpy()


def test_tiled_causal_mask_in_a_model(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp = keras.Input((5, 8))
    layer = MaskedSelfAttention()
    model = keras.Model(inp, layer(inp))
    x = np.random.default_rng(0).standard_normal((3, 5, 8)).astype("float32")
    y = model.predict(x, verbose=0)
    x2 = x.copy()
    x2[:, -1] += 1.0  # the last step never reaches the earlier ones
    y2 = model.predict(x2, verbose=0)
    np.testing.assert_allclose(y2[:, :-1], y[:, :-1], atol=1e-6)
    assert not np.allclose(y2[:, -1], y[:, -1])
    explicit = layer.att(x, x, attention_mask=np.tril(np.ones((3, 5, 5), bool)))
    np.testing.assert_allclose(y, np.asarray(explicit), rtol=1e-5, atol=1e-6)
