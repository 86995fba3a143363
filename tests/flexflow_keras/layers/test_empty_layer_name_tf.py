"""A layer or model named '' keeps the empty name, as Keras 3's Operation does (it refuses only a non-string or a
'/'); flexflow_keras refused it. The DeepLearning.AI Advanced Techniques ResNet lab (C1_W4_Lab_2) builds its
IdentityBlock as tf.keras.Model(name='') twice inside a subclassed ResNet. Against tf.keras 3.15."""

import numpy as np
import pytest

import flexflow_keras as ffk

keras = pytest.importorskip("keras")

pytestmark = pytest.mark.tf


def _resnet(lib):
    class IdentityBlock(lib.Model):
        def __init__(self, filters, kernel_size):
            super().__init__(name="")
            self.conv1 = lib.layers.Conv2D(filters, kernel_size, padding="same")
            self.bn1 = lib.layers.BatchNormalization()
            self.act = lib.layers.Activation("relu")
            self.add = lib.layers.Add()

        def call(self, x):
            return self.act(self.add([self.act(self.bn1(self.conv1(x))), x]))

    class ResNet(lib.Model):
        def __init__(self):
            super().__init__()
            self.conv = lib.layers.Conv2D(4, 3, padding="same")
            self.id1a = IdentityBlock(4, 3)
            self.id1b = IdentityBlock(4, 3)
            self.pool = lib.layers.GlobalAveragePooling2D()
            self.classifier = lib.layers.Dense(3, activation="softmax")

        def call(self, x):
            return self.classifier(self.pool(self.id1b(self.id1a(self.conv(x)))))

    return ResNet()


def test_empty_names_kept_and_a_resnet_of_unnamed_blocks_trains_as_tf():
    assert ffk.layers.Dense(2, name="").name == keras.layers.Dense(2, name="").name == ""
    x = np.random.default_rng(0).random((16, 6, 6, 1)).astype("float32")
    y = np.arange(16) % 3
    models = {}
    for lib in (keras, ffk):
        model = _resnet(lib)
        model(x[:2])
        models[lib] = model
    models[ffk].set_weights(models[keras].get_weights())
    history = {}
    for lib, model in models.items():
        assert [model.id1a.name, model.id1b.name] == ["", ""]
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        history[lib] = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(history[ffk], history[keras], rtol=1e-5)
    np.testing.assert_allclose(models[ffk].predict(x, verbose=0), models[keras].predict(x, verbose=0), atol=1e-6)


@pytest.mark.parametrize("name", ["a/b", 3])
def test_names_keras_refuses_still_refused(name):
    with pytest.raises(ValueError):
        keras.layers.Dense(2, name=name)
    with pytest.raises(ValueError, match="string without '/'"):
        ffk.layers.Dense(2, name=name)
