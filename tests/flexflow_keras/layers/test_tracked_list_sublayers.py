"""Layers appended to a list attribute after it was assigned (``self.blocks = []`` then
``self.blocks.append(Dense(8))``, keras.io's mixed-dimension embedding) are the owner's sublayers, their
weights in the order they were added, as Keras 3's TrackedList; before, they were left out of the
model's weights and never trained."""

import copy

import numpy as np

import flexflow_keras as keras
from flexflow_keras import config, layers


class Blocks(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.encoders = []
        self.projectors = []
        for units in (2, 3):
            self.encoders.append(layers.Dense(units, name=f"enc{units}"))
            self.projectors.append(layers.Dense(4, name=f"proj{units}"))
        self.extra = []
        self.extra += [layers.Dense(4, name="plus")]
        self.extra.insert(0, layers.Dense(4, name="first"))

    def call(self, x):
        y = sum(p(e(x)) for e, p in zip(self.encoders, self.projectors, strict=True))
        return y + self.extra[0](x) + self.extra[1](x)


def test_appended_layers_own_weights_in_keras_order_and_train(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp = keras.Input((5,))
    block = Blocks()
    model = keras.Model(inp, block(inp))
    names = [w.path.split("/")[-2] for w in model.weights]
    assert names == ["enc2", "enc2", "proj2", "proj2", "enc3", "enc3", "proj3", "proj3", "plus", "plus",
                     "first", "first"]  # in the order they joined, as Keras 3
    before = model.get_weights()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((4, 5), "float32"), np.zeros((4, 4), "float32"), epochs=1, verbose=0)
    assert all(not np.allclose(a, b) for a, b in zip(before, model.get_weights(), strict=True))
    assert isinstance(block.encoders, list) and type(copy.copy(block.encoders)) is list  # copies: plain lists
