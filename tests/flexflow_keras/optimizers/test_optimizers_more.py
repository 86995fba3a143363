"""Adadelta, Adamax, Nadam, Ftrl and Lion: the CPU kernels against float64 NumPy references of Keras 3's
formulas, against tf.keras on the same weights and gradients, and their configs."""

import numpy as np
import pytest

from flexflow_keras import optimizers

RNG = np.random.default_rng(7)
W0 = [RNG.standard_normal((4, 3)).astype(np.float32), RNG.standard_normal(5).astype(np.float32)]
GRADS = [[RNG.standard_normal(w.shape).astype(np.float32) for w in W0] for _ in range(4)]


def _reference(name, kw, w, grads):
    """Keras 3's update_step written out in float64 for one variable."""
    w = w.astype(np.float64)
    lr = kw.get("learning_rate", 0.001)
    s = {}
    u_prod = 1.0
    for t, g in enumerate(grads, start=1):
        g = g.astype(np.float64)
        if name == "Adadelta":
            rho, eps = kw.get("rho", 0.95), 1e-7
            ag = rho * s.get("ag", 0) + (1 - rho) * g**2
            d = -np.sqrt(s.get("ad", 0) + eps) * g / np.sqrt(ag + eps)
            s["ad"] = rho * s.get("ad", 0) + (1 - rho) * d**2
            s["ag"] = ag
            w = w + lr * d
        elif name == "Adamax":
            b1, b2 = 0.9, 0.999
            m = s.get("m", 0) + (g - s.get("m", 0)) * (1 - b1)
            u = np.maximum(b2 * s.get("u", 0), np.abs(g))
            s.update(m=m, u=u)
            w = w - lr * m / ((1 - b1**t) * (u + 1e-7))
        elif name == "Nadam":
            b1, b2 = 0.9, 0.999
            u_t = b1 * (1 - 0.5 * 0.96**t)
            u_t1 = b1 * (1 - 0.5 * 0.96 ** (t + 1))
            u_prod = u_prod * u_t
            m = s.get("m", 0) + (g - s.get("m", 0)) * (1 - b1)
            v = s.get("v", 0) + (g**2 - s.get("v", 0)) * (1 - b2)
            s.update(m=m, v=v)
            m_hat = u_t1 * m / (1 - u_prod * u_t1) + (1 - u_t) * g / (1 - u_prod)
            w = w - m_hat * lr / (np.sqrt(v / (1 - b2**t)) + 1e-7)
        elif name == "Ftrl":
            p, l1 = kw.get("learning_rate_power", -0.5), kw.get("l1_regularization_strength", 0.0)
            l2 = kw.get("l2_regularization_strength", 0.0) + kw.get("beta", 0.0) / (2 * lr)
            shrink = kw.get("l2_shrinkage_regularization_strength", 0.0)
            n = s.get("n", np.full_like(w, 0.1))
            n2 = n + g**2
            z = s.get("z", 0) + (g + 2 * shrink * w) - (n2**-p - n**-p) / lr * w
            w = (np.clip(z, -l1, l1) - z) / (n2**-p / lr + 2 * l2)
            s.update(n=n2, z=z)
        elif name == "Lion":
            b1, b2 = kw.get("beta_1", 0.9), kw.get("beta_2", 0.99)
            m = s.get("m", 0)
            w = w - lr * np.sign(m * b1 + g * (1 - b1))
            s["m"] = m * b2 + g * (1 - b2)
    return w


CASES = [
    ("Adadelta", dict(learning_rate=1.0)),
    ("Adadelta", dict(learning_rate=0.5, rho=0.9)),
    ("Adamax", dict(learning_rate=0.01)),
    ("Nadam", dict(learning_rate=0.01)),
    ("Ftrl", dict(learning_rate=0.1)),
    ("Ftrl", dict(learning_rate=0.1, l1_regularization_strength=0.05, l2_regularization_strength=0.01,
                  l2_shrinkage_regularization_strength=0.02, beta=0.1, learning_rate_power=-0.7)),
    ("Lion", dict(learning_rate=0.01)),
]
IDS = [f"{n}-{sorted(k)}" for n, k in CASES]


def _run_ours(name, kwargs, w0, grads):
    opt = getattr(optimizers, name)(**kwargs)
    ws = [w.copy() for w in w0]
    slots = [[np.full(w.shape, init, w.dtype) for _, init in opt.slot_specs(w.shape, w.dtype)] for w in ws]
    for step_grads in grads:
        opt.apply("cpu", opt.iterations, opt.learning_rate_at(opt.iterations), ws, [g.copy() for g in step_grads],
                  slots)
        opt.iterations += 1
    return ws


@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_matches_float64_reference(name, kwargs):
    got = _run_ours(name, kwargs, W0, GRADS)
    for i, w in enumerate(got):
        ref = _reference(name, kwargs, W0[i], [g[i] for g in GRADS])
        if name == "Lion":  # sign(): a float32 tie can flip; compare the steps taken
            assert np.mean(np.isclose(w, ref, atol=1e-5)) > 0.95
        else:
            np.testing.assert_allclose(w, ref, rtol=2e-5, atol=2e-6)


@pytest.mark.tf
@pytest.mark.parametrize("name,kwargs", CASES + [("Adamax", dict(learning_rate=0.01, weight_decay=0.1,
                                                                 clipvalue=0.3)),
                                                 ("Nadam", dict(learning_rate=0.01, clipnorm=0.5))],
                         ids=IDS + ["Adamax-wd-clipvalue", "Nadam-clipnorm"])
def test_matches_tf_keras(name, kwargs):
    tf = pytest.importorskip("tensorflow")
    opt = getattr(tf.keras.optimizers, name)(**kwargs)
    vs = [tf.Variable(w) for w in W0]
    for step_grads in GRADS:
        opt.apply_gradients(zip([tf.constant(g) for g in step_grads], vs, strict=True))
    for ours, theirs in zip(_run_ours(name, kwargs, W0, GRADS), vs, strict=True):
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_keras2_spellings_and_config_round_trip():
    opt = optimizers.Adadelta(lr=1.0, rho=0.9, decay=0.5)
    assert opt.learning_rate == 1.0 and opt.learning_rate_at(2) == pytest.approx(0.5)  # 1 / (1 + 0.5 * 2)
    for name, kwargs in CASES:
        opt = getattr(optimizers, name)(**kwargs)
        again = optimizers.deserialize(optimizers.serialize(opt))
        assert type(again) is type(opt) and again.get_config() == opt.get_config()
        assert isinstance(optimizers.get(name.lower()), type(opt))


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="learning_rate_power"):
        optimizers.Ftrl(learning_rate_power=0.5)
    with pytest.raises(ValueError, match="beta_1"):
        optimizers.Lion(beta_1=0.0)
