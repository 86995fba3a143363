"""Gradients of gradients against TensorFlow: keras.io's WGAN-GP gradient penalty (the critic's conv,
LeakyReLU, padding, cropping and Dense, differentiated with respect to its weights), a PINN's second
derivative (Dense with tanh / sigmoid / softplus on a concatenation of inputs) under a third tape, and
WGAN-GP's train_step for two steps. Our side runs with the `tf` module `python -m flexflow_keras` gives
scripts (keras_alias), so the code is the same source for both."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")  # the stand-in module, without installing the import hook
SIDES = [(tf, tk), (FFTF, ff)]


def _copy(src, dst):
    dst.set_weights([np.asarray(w) for w in src.get_weights()])


def _critic(K, dropout=0.0):
    inp = K.Input((6, 6, 1))
    x = K.layers.ZeroPadding2D((2, 2))(inp)
    x = K.layers.Conv2D(4, (5, 5), strides=(2, 2), padding="same")(x)
    x = K.layers.LeakyReLU(0.2)(x)
    x = K.layers.Conv2D(6, (3, 3), strides=(2, 2), padding="same")(x)
    x = K.layers.LeakyReLU(0.2)(x)
    x = K.layers.Cropping2D((0, 1))(x)
    x = K.layers.Flatten()(x)
    x = K.layers.Dropout(dropout)(x)
    return K.Model(inp, K.layers.Dense(1)(x))


def _generator(K):
    inp = K.Input((5,))
    x = K.layers.Dense(4 * 4 * 3, use_bias=False)(inp)
    x = K.layers.BatchNormalization()(x)
    x = K.layers.LeakyReLU(0.2)(x)
    x = K.layers.Reshape((4, 4, 3))(x)
    x = K.layers.UpSampling2D((2, 2))(x)
    x = K.layers.Conv2D(1, (3, 3), padding="same", use_bias=False)(x)
    x = K.layers.BatchNormalization()(x)
    x = K.layers.Activation("tanh")(x)
    return K.Model(inp, K.layers.Cropping2D((1, 1))(x))


def _penalty(T, critic, interpolated):
    """keras.io wgan_gp.py's gradient_penalty, its random alpha given."""
    with T.GradientTape() as gp_tape:
        gp_tape.watch(interpolated)
        pred = critic(interpolated, training=True)
    grads = gp_tape.gradient(pred, [interpolated])[0]
    norm = T.sqrt(T.reduce_sum(T.square(grads), axis=[1, 2, 3]))
    return T.reduce_mean((norm - 1.0) ** 2)


def test_gradient_penalty_of_a_critic_matches_tensorflow():
    critics = [_critic(K) for _, K in SIDES]
    _copy(critics[0], critics[1])
    rng = np.random.default_rng(0)
    real, fake = (rng.standard_normal((3, 6, 6, 1)).astype("float32") for _ in range(2))
    alpha = rng.standard_normal((3, 1, 1, 1)).astype("float32")
    results = []
    for (T, _), critic in zip(SIDES, critics, strict=True):
        interpolated = T.convert_to_tensor(real + alpha * (fake - real))
        with T.GradientTape() as tape:
            gp = _penalty(T, critic, interpolated)
            loss = T.reduce_mean(critic(fake, training=True)) + 10.0 * gp
        grads = tape.gradient(loss, critic.trainable_variables)
        results.append((float(gp), [np.asarray(g) for g in grads]))
    (gp_tf, g_tf), (gp_ff, g_ff) = results
    np.testing.assert_allclose(gp_ff, gp_tf, rtol=1e-5)
    assert len(g_ff) == len(g_tf) == 6
    for a, b in zip(g_tf, g_ff, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5 * np.abs(a).max())


def _pinn(K):
    x_in, t_in = K.Input((1,)), K.Input((1,))
    h = K.layers.Concatenate()([x_in, t_in])
    h = K.layers.Dense(12, activation="tanh")(h)
    h = K.layers.Dense(12, activation="sigmoid")(h)
    h = K.layers.Dense(12, activation="softplus")(h)
    return K.Model([x_in, t_in], K.layers.Dense(1)(h))


def _pinn_loss(T, model, xt):
    """Burgers-like residual u_t + u u_x - 0.1 u_xx, with x and t sliced out of one (n, 2) tensor."""
    with T.GradientTape() as outer:
        with T.GradientTape(persistent=True) as t2:
            t2.watch(xt)
            with T.GradientTape() as t1:
                t1.watch(xt)
                x, t = xt[:, 0:1], xt[:, 1:2]
                u = model([x, t], training=True)
            du = t1.gradient(u, xt)
            u_x, u_t = du[:, 0:1], du[:, 1:2]
        u_xx = t2.gradient(u_x, xt)[:, 0:1]
        residual = u_t + u * u_x - 0.1 * u_xx
        loss = T.reduce_mean(T.square(residual)) + T.reduce_mean(T.square(u - T.sin(x)))
    return loss, u_xx, outer.gradient(loss, model.trainable_variables)


def test_pinn_second_derivative_matches_tensorflow():
    models = [_pinn(K) for _, K in SIDES]
    _copy(models[0], models[1])
    xt = np.random.default_rng(1).uniform(-1, 1, (16, 2)).astype("float32")
    results = []
    for (T, _), model in zip(SIDES, models, strict=True):
        loss, u_xx, grads = _pinn_loss(T, model, T.convert_to_tensor(xt))
        results.append((float(loss), np.asarray(u_xx), [np.asarray(g) for g in grads]))
    (l_tf, uxx_tf, g_tf), (l_ff, uxx_ff, g_ff) = results
    np.testing.assert_allclose(l_ff, l_tf, rtol=1e-4)
    np.testing.assert_allclose(uxx_ff, uxx_tf, rtol=1e-4, atol=1e-5 * np.abs(uxx_tf).max())
    for a, b in zip(g_tf, g_ff, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4 * np.abs(a).max())


def _wgan_steps(T, K, generator, critic, reals, noises, alphas):
    """keras.io wgan_gp.py's train_step (one critic step per generator step), its random values given."""
    d_opt = K.optimizers.Adam(learning_rate=0.0002, beta_1=0.5, beta_2=0.9)
    g_opt = K.optimizers.Adam(learning_rate=0.0002, beta_1=0.5, beta_2=0.9)
    out = []
    for real, (z1, z2), alpha in zip(reals, noises, alphas, strict=True):
        with T.GradientTape() as tape:
            fake = generator(z1, training=True)
            d_cost = T.reduce_mean(critic(fake, training=True)) - T.reduce_mean(critic(real, training=True))
            interpolated = real + alpha * (fake - real)
            d_loss = d_cost + 10.0 * _penalty(T, critic, interpolated)
        d_grads = tape.gradient(d_loss, critic.trainable_variables)
        d_opt.apply_gradients(zip(d_grads, critic.trainable_variables, strict=True))
        with T.GradientTape() as tape:
            g_loss = -T.reduce_mean(critic(generator(z2, training=True), training=True))
        g_grads = tape.gradient(g_loss, generator.trainable_variables)
        g_opt.apply_gradients(zip(g_grads, generator.trainable_variables, strict=True))
        out.append((float(d_loss), float(g_loss)))
    return out


def test_wgan_gp_train_step_matches_tensorflow():
    nets = [(_generator(K), _critic(K)) for _, K in SIDES]
    _copy(nets[0][0], nets[1][0])
    _copy(nets[0][1], nets[1][1])
    rng = np.random.default_rng(2)
    reals = [rng.uniform(-1, 1, (4, 6, 6, 1)).astype("float32") for _ in range(3)]
    noises = [tuple(rng.standard_normal((4, 5)).astype("float32") for _ in range(2)) for _ in range(3)]
    alphas = [rng.standard_normal((4, 1, 1, 1)).astype("float32") for _ in range(3)]
    runs = [_wgan_steps(T, K, g, d, reals, noises, alphas) for (T, K), (g, d) in zip(SIDES, nets, strict=True)]
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-3, atol=1e-4)


def test_jacobian_and_batch_jacobian_match_tensorflow():
    """One gradient per target element: the Jacobian of a small MLP's outputs with respect to its inputs
    and its kernel, and the per-sample Jacobian (a PINN's gradient of u with respect to (x, t) per point)."""
    models = [_pinn(K) for _, K in SIDES]
    _copy(models[0], models[1])
    xt = np.random.default_rng(3).uniform(-1, 1, (4, 2)).astype("float32")
    results = []
    for (T, _), model in zip(SIDES, models, strict=True):
        x = T.convert_to_tensor(xt)
        with T.GradientTape(persistent=True) as tape:
            tape.watch(x)
            u = model([x[:, 0:1], x[:, 1:2]]) * x  # (4, 2): each row depends on its own sample only
        jx, jk = tape.jacobian(u, [x, model.layers[-1].kernel])
        bj = tape.batch_jacobian(u, x)
        results.append([np.asarray(jx), np.asarray(jk), np.asarray(bj)])
    for a, b in zip(*results, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_a_loss_on_a_jacobian_differentiates_through_it():
    # a physics-informed loss on batch_jacobian / jacobian inside an outer tape: the outer gradient with
    # respect to the weights (the Jacobian was a plain value, so every weight's gradient was None)
    models = [_pinn(K) for _, K in SIDES]
    _copy(models[0], models[1])
    xt = np.random.default_rng(4).uniform(-1, 1, (3, 2)).astype("float32")
    results = []
    for (T, _), model in zip(SIDES, models, strict=True):
        x = T.convert_to_tensor(xt)
        grads = []
        for kind in ("batch_jacobian", "jacobian"):
            with T.GradientTape() as outer:
                with T.GradientTape(persistent=True) as inner:
                    inner.watch(x)
                    u = model([x[:, 0:1], x[:, 1:2]])
                jac = getattr(inner, kind)(u, x)
                loss = T.reduce_sum(jac * jac)
            grads += [None if g is None else np.asarray(g) for g in outer.gradient(loss, model.trainable_variables)]
        results.append(grads)
    assert sum(g is not None for g in results[0]) >= 12  # the last bias does not reach a Jacobian: None
    for a, b in zip(*results, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
