"""After training, `summary()` counts the optimizer's variables as Keras 3 does ("Optimizer params": the
iteration count, the learning rate unless a schedule gives it, every slot, Nadam's momentum product) and
adds them to the total. It left them out: keras.io's involution example printed "Total params: 13,080"
where tf.keras prints 39,230 and an "Optimizer params: 26,150 (102.15 KB)" line."""

import numpy as np
import pytest

import flexflow_keras

X = np.random.RandomState(0).rand(16, 4).astype("float32")
Y = np.random.RandomState(1).rand(16, 1).astype("float32")


def _optimizers(lib):
    o = lib.optimizers
    return [o.SGD(), o.SGD(momentum=0.9), o.Adam(), o.Adam(amsgrad=True),
            o.Adam(o.schedules.ExponentialDecay(0.1, 10, 0.9)), o.RMSprop(momentum=0.5, centered=True), o.Adagrad(),
            o.AdamW(), o.Nadam(), o.Adamax(), o.Ftrl(), o.Lion(), o.Adadelta(), o.Adam(gradient_accumulation_steps=2)]


def _param_lines(lib, opt, train=True):
    m = lib.Sequential([lib.Input((4,)), lib.layers.Dense(3), lib.layers.BatchNormalization(), lib.layers.Dense(1)])
    m.compile(opt, "mse")
    if train:
        m.fit(X, Y, verbose=0, epochs=1)
    out = []
    m.summary(print_fn=lambda line, *a, **k: out.append(line))
    return [line.strip() for line in "\n".join(out).splitlines() if "params" in line]


def test_counts():
    adam = _param_lines(flexflow_keras, flexflow_keras.optimizers.Adam())
    assert adam[0] == "Total params: 83 (336.00 B)" and adam[-1] == "Optimizer params: 52 (212.00 B)"  # 1+1+2*25
    sched = _param_lines(flexflow_keras, flexflow_keras.optimizers.Adam(
        flexflow_keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9)))
    assert sched[-1] == "Optimizer params: 51 (208.00 B)"  # no learning-rate variable
    assert not any("Optimizer" in line for line in _param_lines(flexflow_keras, flexflow_keras.optimizers.Adam(),
                                                                 train=False))


def test_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours = [_param_lines(flexflow_keras, o) for o in _optimizers(flexflow_keras)]
    theirs = [_param_lines(keras, o) for o in _optimizers(keras)]
    assert ours == theirs
