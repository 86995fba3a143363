"""Optimizer API: defaults, Keras 2 spellings, learning rate and schedules, get/config, clipping, weight
decay, gradient accumulation and eager apply_gradients, against float64 NumPy references."""

import logging

import numpy as np
import pytest

from flexflow_keras import optimizers
from flexflow_keras.ops.graph import Variable
from flexflow_keras.optimizers import schedules


def _slots(opt, ws):
    return [[np.full(w.shape, init, w.dtype) for _, init in opt.slot_specs(w.shape, w.dtype)] for w in ws]


def _step(opt, ws, gs, slots, names=None):  # as the training loop: `_iterations` counts its steps
    opt.apply("cpu", opt._iterations, opt.learning_rate_at(opt._iterations), ws, gs, slots, names)
    opt._iterations += 1


def test_keras3_defaults():
    assert optimizers.SGD().get_config()["learning_rate"] == 0.01
    adam = optimizers.Adam()
    assert (adam.learning_rate, adam.beta_1, adam.beta_2, adam.epsilon, adam.amsgrad) == (0.001, 0.9, 0.999, 1e-7, False)
    rms = optimizers.RMSprop()
    assert (rms.learning_rate, rms.rho, rms.momentum, rms.epsilon, rms.centered) == (0.001, 0.9, 0.0, 1e-7, False)
    ada = optimizers.Adagrad()
    assert (ada.learning_rate, ada.initial_accumulator_value, ada.epsilon) == (0.001, 0.1, 1e-7)
    assert optimizers.AdamW().weight_decay == 0.004


def test_slot_specs_follow_hyperparameters():
    assert optimizers.SGD().slot_specs((3,), "float32") == []
    assert optimizers.SGD(momentum=0.9).slot_specs((3,), "float32") == [("momentum", 0.0)]
    assert [n for n, _ in optimizers.Adam(amsgrad=True).slot_specs((3,))] == ["momentum", "velocity", "velocity_hat"]
    assert [n for n, _ in optimizers.RMSprop(momentum=0.1, centered=True).slot_specs((3,))] == [
        "velocity", "momentum", "average_gradient"]
    assert optimizers.Adagrad(initial_accumulator_value=0.5).slot_specs((2,)) == [("accumulator", 0.5)]
    assert optimizers.Adam(gradient_accumulation_steps=2).slot_specs((2,))[-1] == ("gradient_accumulator", 0.0)


def test_keras2_lr_and_decay(caplog):
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        opt = optimizers.SGD(lr=0.1, decay=0.5, momentum=0.9, nesterov=True)
    assert opt.learning_rate == 0.1 and opt.lr == 0.1
    assert "Keras 2" in caplog.text
    assert opt.learning_rate_at(0) == pytest.approx(0.1)
    assert opt.learning_rate_at(4) == pytest.approx(0.1 / 3)
    # decay changes the update as Keras 2 did: lr_t = lr / (1 + decay * t)
    w, g = np.ones(3, np.float32), np.ones(3, np.float32)
    plain = optimizers.SGD(lr=0.1, decay=0.5)
    plain.iterations = 2
    plain.apply("cpu", 2, plain.learning_rate_at(2), [w], [g], [[]])
    np.testing.assert_allclose(w, 1 - 0.05, rtol=1e-6)


def test_learning_rate_setter_and_schedule_read_only():
    opt = optimizers.Adam(0.01)
    opt.learning_rate = 0.5
    assert opt.learning_rate == 0.5 and opt.learning_rate_at(10) == 0.5
    opt.lr = 0.25
    assert opt.learning_rate == 0.25
    sched = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    opt = optimizers.SGD(learning_rate=sched)
    opt.iterations = 10
    assert opt.learning_rate == pytest.approx(0.05)
    assert opt.learning_rate_at(20) == pytest.approx(0.025)
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.1
    callable_opt = optimizers.SGD(learning_rate=lambda: 0.3)
    assert callable_opt.learning_rate_at(5) == 0.3


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="unexpected argument.*'betas'"):
        optimizers.Adam(betas=(0.9, 0.99))
    with pytest.raises(ValueError, match="only one of clipnorm"):
        optimizers.SGD(clipnorm=1.0, clipvalue=1.0)
    with pytest.raises(ValueError, match="momentum"):
        optimizers.SGD(momentum=1.5)
    with pytest.raises(ValueError, match="use_ema"):
        optimizers.Adam(use_ema=True)
    with pytest.raises(ValueError, match="learning_rate"):
        optimizers.Adam(learning_rate="fast")
    with pytest.raises(ValueError, match="gradient_accumulation_steps"):
        optimizers.Adam(gradient_accumulation_steps=1)
    with pytest.raises(ValueError, match="backend"):
        optimizers.SGD().apply("tpu", 0, 0.1, [], [], [])


def test_get_strings_dicts_objects_and_errors():
    assert isinstance(optimizers.get("adam"), optimizers.Adam)
    assert isinstance(optimizers.get("RMSprop"), optimizers.RMSprop)
    sgd = optimizers.SGD()
    assert optimizers.get(sgd) is sgd
    assert optimizers.get(None) is None
    d = optimizers.get({"class_name": "SGD", "config": {"learning_rate": 0.2, "momentum": 0.5}})
    assert (d.learning_rate, d.momentum) == (0.2, 0.5)
    with pytest.raises(ValueError, match="Valid optimizers: adadelta, adafactor, adagrad, adam, adamax, adamw, ftrl, "
                                         "lamb, lion, nadam, rmsprop, schedulefreeadamw, sgd"):
        optimizers.get("adamm")
    with pytest.raises(ValueError, match="not implemented by flexflow_keras"):
        optimizers.get("muon")
    assert isinstance(optimizers.get("adafactor"), optimizers.Adafactor)
    assert isinstance(optimizers.get({"class_name": "Lamb", "config": {"learning_rate": 0.2}}), optimizers.Lamb)


def test_config_round_trip_with_schedule():
    sched = schedules.PiecewiseConstantDecay([10, 20], [0.1, 0.01, 0.001])
    opt = optimizers.RMSprop(learning_rate=sched, rho=0.8, centered=True, clipnorm=2.0, name="my_rms")
    config = opt.get_config()
    assert config["learning_rate"]["class_name"] == "PiecewiseConstantDecay"
    again = optimizers.RMSprop.from_config(config)
    assert again.get_config() == config
    assert again.learning_rate_at(15) == 0.01
    via_serialize = optimizers.deserialize(optimizers.serialize(opt))
    assert via_serialize.get_config() == config
    with pytest.raises(ValueError, match="known schedules"):
        schedules.deserialize({"class_name": "Nope", "config": {}})


def test_clipnorm_global_clipnorm_and_clipvalue_reference():
    rng = np.random.default_rng(0)
    g64 = [rng.standard_normal((4, 3)) * 3, rng.standard_normal(5)]
    w0 = [np.zeros((4, 3), np.float32), np.zeros(5, np.float32)]
    norms = [np.sqrt((g ** 2).sum()) for g in g64]
    for kwargs, want in [
        (dict(clipnorm=1.0), [g * 1.0 / max(n, 1.0) for g, n in zip(g64, norms, strict=True)]),
        (dict(global_clipnorm=1.0), [g / max(np.sqrt(sum(n ** 2 for n in norms)), 1.0) for g in g64]),
        (dict(clipvalue=0.5), [np.clip(g, -0.5, 0.5) for g in g64]),
    ]:
        opt = optimizers.SGD(learning_rate=1.0, **kwargs)
        ws = [w.copy() for w in w0]
        _step(opt, ws, [g.astype(np.float32) for g in g64], _slots(opt, ws))
        for w, expect in zip(ws, want, strict=True):
            np.testing.assert_allclose(w, -expect, rtol=1e-5, atol=1e-6)
    assert optimizers.SGD(global_clipnorm=1.0).needs_all_variables
    assert not optimizers.SGD(clipnorm=1.0).needs_all_variables


def test_weight_decay_and_exclusion_by_name():
    opt = optimizers.SGD(learning_rate=0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["bias"])
    ws = [np.ones(3, np.float32), np.ones(2, np.float32)]
    gs = [np.zeros(3, np.float32), np.zeros(2, np.float32)]
    _step(opt, ws, gs, _slots(opt, ws), names=["dense/kernel", "dense/bias"])
    np.testing.assert_allclose(ws[0], 1 - 0.5 * 0.1, rtol=1e-6)
    np.testing.assert_allclose(ws[1], 1.0)


def test_gradient_accumulation_reference():
    rng = np.random.default_rng(3)
    opt = optimizers.Adam(learning_rate=0.1, gradient_accumulation_steps=3)
    w = rng.standard_normal(4).astype(np.float32)
    w64 = w.astype(np.float64)
    slots = _slots(opt, [w])
    m = v = np.zeros(4)
    for t in range(6):
        g = rng.standard_normal(4).astype(np.float32)
        _step(opt, [w], [g], slots)
        if t % 3 == 0:
            acc = np.zeros(4)
        acc = acc + g
        if t % 3 == 2:  # update with the mean gradient; Adam's step counts updates, not batches
            ge, k = acc / 3, t // 3 + 1
            m = m + (ge - m) * 0.1
            v = v + (ge * ge - v) * 0.001
            w64 = w64 - m * 0.1 * np.sqrt(1 - 0.999 ** k) / (1 - 0.9 ** k) / (np.sqrt(v) + 1e-7)
        np.testing.assert_allclose(w, w64, rtol=1e-5, atol=1e-6)
    assert not slots[0][-1].any()


def test_none_gradient_skips_variable():
    opt = optimizers.SGD(0.1)
    ws = [np.ones(2, np.float32), np.ones(2, np.float32)]
    _step(opt, ws, [None, np.ones(2, np.float32)], [[], []])
    np.testing.assert_allclose(ws[0], 1.0)
    np.testing.assert_allclose(ws[1], 0.9, rtol=1e-6)


def test_eager_apply_gradients_on_variables():
    v = Variable("kernel", (3,), initializer=np.array([1.0, 2.0, 3.0]))
    opt = optimizers.SGD(learning_rate=0.1, momentum=0.9)
    for _ in range(2):
        opt.apply_gradients([(np.ones(3, np.float32), v)])
    # m1 = -0.1, w1 = w0 - 0.1; m2 = -0.09 - 0.1 = -0.19, w2 = w1 - 0.19
    np.testing.assert_allclose(v.numpy(), np.array([1.0, 2.0, 3.0]) - 0.29, rtol=1e-6)
    assert opt.iterations == 2 and len(opt.variables) == 3  # Keras: iteration, learning_rate, the momentum


def test_learning_rate_answers_as_keras_variable():
    """Public scripts: ``opt.learning_rate.numpy()``, ``.assign(...)``, Keras 2's ``K.set_value(opt.lr, x)``
    inside a callback, ``K.get_value``; the value stays a float (arithmetic, JSON, pickling)."""
    import copy
    import json
    import pickle

    from flexflow_keras import backend as K

    opt = optimizers.Adam(1e-3)
    assert opt.learning_rate.numpy() == np.float32(1e-3) and opt.learning_rate.dtype == "float32"
    opt.learning_rate.assign(1e-4)
    assert opt.learning_rate == pytest.approx(1e-4)
    K.set_value(opt.lr, 5e-4)
    assert K.get_value(opt.lr) == np.float32(5e-4) and opt.lr * 2 == pytest.approx(1e-3)
    opt.learning_rate.assign_sub(1e-4)
    assert float(opt.learning_rate) == pytest.approx(4e-4)
    assert type(pickle.loads(pickle.dumps(opt.lr))) is float and type(copy.deepcopy(opt.lr)) is float
    assert json.loads(json.dumps(opt.get_config()))["learning_rate"] == pytest.approx(4e-4)
    scheduled = optimizers.SGD(schedules.ExponentialDecay(0.1, 10, 0.5))
    assert scheduled.learning_rate.numpy() == np.float32(0.1)
    with pytest.raises(TypeError, match="not settable"):
        scheduled.learning_rate.assign(0.01)


def test_default_names_count_up_and_clear_session_starts_them_again():
    # Keras 3: adam, adam_1, ... and clear_session() forgets them (the strategy cache once keyed on them)
    import flexflow_keras as keras

    keras.backend.clear_session()
    names = [keras.optimizers.Adam().name, keras.optimizers.Adam().name]
    keras.backend.clear_session()
    assert names + [keras.optimizers.Adam().name] == ["adam", "adam_1", "adam"]
