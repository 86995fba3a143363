"""keras.io's Perceiver: a subclassed Model whose own build() adds a weight, makes functional sub-models
and ends with ``super().build(input_shape)``; one sub-model is built on a dict of Inputs
(``Model(inputs={"latent_array": Input(...), "data_array": Input(...)})``) and called with a dict of
those keys. Before, super().build() traced the model, whose unfinished build() ran again without end
(RecursionError), and a dict call was matched by Input *names*: with keys that are not the names it
raised, and with keys that are other inputs' names it swapped the inputs silently. Keras 3 marks the
model built in super().build() and matches a dict by the keys of the dict the model was built on."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


def _cross(K):
    inputs = {"latent": K.layers.Input(shape=(3, 4)), "data": K.layers.Input(shape=(5, 4))}
    att = K.layers.Attention(use_scale=True)([K.layers.Dense(4)(inputs["latent"]), inputs["data"]])
    out = K.layers.Add()([att, inputs["latent"]])
    return K.Model(inputs=inputs, outputs=K.layers.LayerNormalization()(out))


def _model(K):
    class Latent(K.Model):
        def build(self, input_shape):
            self.latent = self.add_weight(shape=(3, 4), initializer="random_normal", trainable=True)
            self.embed = K.layers.Dense(4)
            self.cross = _cross(K)
            self.head = K.layers.Dense(5)
            super().build(input_shape)

        def call(self, x):
            inputs = {"latent": K.ops.expand_dims(self.latent, 0), "data": self.embed(x)}
            for _ in range(2):  # the same sub-model twice, its latent fed back
                inputs["latent"] = self.cross(inputs)
            return self.head(K.ops.mean(inputs["latent"], axis=1))

    return Latent()


def _swapped(K):
    a = K.layers.Input(shape=(2,), name="b")
    b = K.layers.Input(shape=(2,), name="a")
    return K.Model(inputs={"a": a, "b": b}, outputs=K.layers.Dense(1)(a) - b[:, :1])


def test_dict_keys_not_input_names_are_matched_by_key():
    tk.utils.set_random_seed(0)
    tm, fm = _swapped(tk), _swapped(ff)
    fm.set_weights(tm.get_weights())
    rng = np.random.default_rng(0)
    x = {"a": rng.standard_normal((4, 2)).astype("float32"), "b": rng.standard_normal((4, 2)).astype("float32")}
    np.testing.assert_allclose(np.asarray(fm(x)), np.asarray(tm(x)), rtol=1e-6, atol=1e-6)


def test_subclass_building_sub_models_trains_as_tf_keras():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 5, 2)).astype("float32")
    y = rng.integers(0, 5, (8,))
    tk.utils.set_random_seed(0)
    tm, fm = _model(tk), _model(ff)
    tm(x[:2])
    fm(x[:2])
    fm.set_weights(tm.get_weights())
    np.testing.assert_allclose(fm.predict(x, verbose=0), tm.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    for m, K in ((tm, tk), (fm, ff)):
        m.compile(optimizer=K.optimizers.SGD(0.1),
                  loss=K.losses.SparseCategoricalCrossentropy(from_logits=True))
    th = tm.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0).history["loss"]
    fh = fm.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(fh, th, rtol=1e-5)
    for a, b in zip(fm.get_weights(), tm.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
