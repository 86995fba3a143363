"""GradientTape against TensorFlow's, on the recipes public scripts write: the keras-io custom training
loop (with `model.losses`), the TensorFlow DCGAN tutorial's two tapes, Grad-CAM's gradient with respect to
an activation, FGSM's with respect to the input image, and a linear regression on `tf.Variable`s. Our side
runs with the `tf` module `python -m flexflow_keras` gives scripts (keras_alias), so the loops are the same
source for both."""

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


def _mlp(K):
    inp = K.Input((6,))
    h = K.layers.Dense(16, activation="relu", kernel_regularizer=K.regularizers.l2(0.01))(inp)
    h = K.layers.Dense(16, activation="relu")(h)
    return K.Model(inp, K.layers.Dense(4)(h))


def test_custom_training_loop_matches_tensorflow():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((64, 6)).astype("float32"), rng.integers(0, 4, 64)
    models = [_mlp(K) for _, K in SIDES]
    _copy(models[0], models[1])
    results = []
    for (T, K), model in zip(SIDES, models, strict=True):
        optimizer = K.optimizers.Adam(learning_rate=1e-2)
        loss_fn = K.losses.SparseCategoricalCrossentropy(from_logits=True)
        acc = K.metrics.SparseCategoricalAccuracy()
        dataset = T.data.Dataset.from_tensor_slices((x, y)).batch(16)
        losses = []
        for _ in range(2):
            for xb, yb in dataset:
                with T.GradientTape() as tape:
                    logits = model(xb, training=True)
                    loss_value = loss_fn(yb, logits)
                    loss_value += sum(model.losses)
                grads = tape.gradient(loss_value, model.trainable_weights)
                optimizer.apply_gradients(zip(grads, model.trainable_weights, strict=True))
                acc.update_state(yb, logits)
                losses.append(float(loss_value))
        results.append((losses, float(acc.result()), [np.asarray(w) for w in model.get_weights()]))
    (l1, a1, w1), (l2, a2, w2) = results
    np.testing.assert_allclose(l2, l1, rtol=1e-5)
    assert a1 == a2
    for a, b in zip(w1, w2, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


def _generator(K):
    return K.Sequential([
        K.Input((8,)), K.layers.Dense(7 * 7 * 4, use_bias=False), K.layers.BatchNormalization(),
        K.layers.LeakyReLU(), K.layers.Reshape((7, 7, 4)),
        K.layers.Conv2DTranspose(4, (5, 5), strides=(1, 1), padding="same", use_bias=False),
        K.layers.BatchNormalization(), K.layers.LeakyReLU(),
        K.layers.Conv2DTranspose(1, (5, 5), strides=(2, 2), padding="same", use_bias=False, activation="tanh")])


def _discriminator(K):
    return K.Sequential([
        K.Input((14, 14, 1)), K.layers.Conv2D(4, (5, 5), strides=(2, 2), padding="same"), K.layers.LeakyReLU(),
        K.layers.Conv2D(8, (5, 5), strides=(2, 2), padding="same"), K.layers.LeakyReLU(), K.layers.Flatten(),
        K.layers.Dense(1)])


def test_dcgan_two_tapes_match_tensorflow():
    nets = [(_generator(K), _discriminator(K)) for _, K in SIDES]
    _copy(nets[0][0], nets[1][0])
    _copy(nets[0][1], nets[1][1])
    results = []
    for (T, K), (generator, discriminator) in zip(SIDES, nets, strict=True):
        cross_entropy = K.losses.BinaryCrossentropy(from_logits=True)
        gen_opt, disc_opt = K.optimizers.Adam(1e-3), K.optimizers.Adam(1e-3)
        rng, losses = np.random.default_rng(1), []
        for _ in range(3):
            images = rng.standard_normal((6, 14, 14, 1)).astype("float32")
            noise = rng.standard_normal((6, 8)).astype("float32")
            with T.GradientTape() as gen_tape, T.GradientTape() as disc_tape:
                generated_images = generator(noise, training=True)
                real_output = discriminator(images, training=True)
                fake_output = discriminator(generated_images, training=True)
                gen_loss = cross_entropy(T.ones_like(fake_output), fake_output)
                disc_loss = (cross_entropy(T.ones_like(real_output), real_output)
                             + cross_entropy(T.zeros_like(fake_output), fake_output))
            gen_grads = gen_tape.gradient(gen_loss, generator.trainable_variables)
            disc_grads = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
            gen_opt.apply_gradients(zip(gen_grads, generator.trainable_variables, strict=True))
            disc_opt.apply_gradients(zip(disc_grads, discriminator.trainable_variables, strict=True))
            losses.append((float(gen_loss), float(disc_loss)))
        results.append((losses, [np.asarray(w) for w in generator.get_weights()]))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    for a, b in zip(results[0][1], results[1][1], strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def _classifier(K):
    inp = K.Input((16, 16, 3))
    x = K.layers.Conv2D(8, 3, activation="relu")(inp)
    x = K.layers.Conv2D(8, 3, activation="relu", name="last_conv")(x)
    x = K.layers.GlobalAveragePooling2D()(x)
    return K.Model(inp, K.layers.Dense(4, activation="softmax")(x))


def _gradcam(T, K, model, img_array):
    """keras-io's grad_cam.py, as published."""
    grad_model = K.models.Model(model.inputs, [model.get_layer("last_conv").output, model.output])
    with T.GradientTape() as tape:
        last_conv_layer_output, preds = grad_model(img_array)
        pred_index = T.argmax(preds[0])
        class_channel = preds[:, pred_index]
    grads = tape.gradient(class_channel, last_conv_layer_output)
    pooled_grads = T.reduce_mean(grads, axis=(0, 1, 2))
    last_conv_layer_output = last_conv_layer_output[0]
    heatmap = last_conv_layer_output @ pooled_grads[..., T.newaxis]
    heatmap = T.squeeze(heatmap)
    heatmap = T.maximum(heatmap, 0) / T.math.reduce_max(heatmap)
    return heatmap.numpy()


def _fgsm(T, K, model, image, label):
    """The TensorFlow adversarial-example tutorial's create_adversarial_pattern."""
    loss_object = K.losses.CategoricalCrossentropy()
    with T.GradientTape() as tape:
        tape.watch(image)
        prediction = model(image)
        loss = loss_object(label, prediction)
    gradient = tape.gradient(loss, image)
    return gradient.numpy(), T.sign(gradient).numpy()


def test_grad_cam_and_fgsm_match_tensorflow():
    models = [_classifier(K) for _, K in SIDES]
    _copy(models[0], models[1])
    img = np.random.default_rng(2).random((1, 16, 16, 3)).astype("float32")
    heat = [_gradcam(T, K, m, img) for (T, K), m in zip(SIDES, models, strict=True)]
    assert heat[1].shape == heat[0].shape == (12, 12)
    np.testing.assert_allclose(heat[1], heat[0], atol=1e-5)
    for m in models:
        m.layers[-1].activation = None  # keras-io: "Remove last layer's softmax", then the heatmap of logits
    logit_heat = [_gradcam(T, K, m, img) for (T, K), m in zip(SIDES, models, strict=True)]
    np.testing.assert_allclose(logit_heat[1], logit_heat[0], atol=1e-5)
    assert np.abs(logit_heat[0] - heat[0]).max() > 1e-3  # the softmax is really gone
    for m in models:
        m.layers[-1].activation = (tk if m is models[0] else ff).activations.softmax
    label = np.eye(4, dtype="float32")[[2]]
    (g1, s1), (g2, s2) = [_fgsm(T, K, m, T.constant(img), label) for (T, K), m in zip(SIDES, models, strict=True)]
    np.testing.assert_allclose(g2, g1, rtol=1e-4, atol=1e-4 * np.abs(g1).max())
    assert (s1 != s2).mean() < 0.01  # signs of gradients within rounding of zero may differ


def test_linear_regression_on_tf_variables_matches_tensorflow():
    X = np.array([3.3, 4.4, 5.5, 6.71, 6.93, 4.168, 9.779, 6.182, 7.59, 2.167])
    Y = np.array([1.7, 2.76, 2.09, 3.19, 1.694, 1.573, 3.366, 2.596, 2.53, 1.221])
    out = []
    for T, _ in SIDES:
        W, b = T.Variable(0.5, name="weight"), T.Variable(0.1, name="bias")
        optimizer = T.optimizers.SGD(0.01)
        for _ in range(50):
            with T.GradientTape() as g:
                loss = T.reduce_mean(T.square(W * X + b - Y))
            gradients = g.gradient(loss, [W, b])
            optimizer.apply_gradients(zip(gradients, [W, b], strict=True))
        out.append((float(loss), float(W.numpy()), float(b.numpy()), str(np.asarray(W.numpy()).dtype)))
    assert out[1][3] == out[0][3] == "float32"
    np.testing.assert_allclose(out[1][:3], out[0][:3], rtol=1e-5)


@pytest.mark.parametrize("T", [tf, FFTF], ids=["tf", "ff"])
def test_a_second_gradient_of_a_non_persistent_tape_is_a_runtime_error(T):
    """handson-ml3 ch. 12 catches it with ``except RuntimeError``; ours raised a ValueError subclass."""
    w1, w2 = T.Variable(5.0), T.Variable(3.0)
    with T.GradientTape() as tape:
        z = 3 * w1 ** 2 + 2 * w1 * w2
    assert float(tape.gradient(z, w1)) == 36.0
    with pytest.raises(RuntimeError):
        tape.gradient(z, w2)
