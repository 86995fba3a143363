"""keras.layers.STFTSpectrogram and keras.initializers.STFT, as Keras 3.15 defines them (keras.io's audio
classification example builds its models on the layer; it was refused as unsupported): every mode, valid and
same padding, two channels, expand_dims, an open time length, a trainable layer's fit, the config, and
channels_first against channels_last."""

import numpy as np
import pytest

import flexflow_keras

RS = np.random.RandomState(0)
SIG = RS.randn(2, 300, 2).astype("float32")
KW = dict(frame_length=40, frame_step=16, fft_length=64)


def _layer(lib, **kw):
    return lib.layers.STFTSpectrogram(**{**KW, **kw})


@pytest.fixture(scope="module")
def tfk():
    pytest.importorskip("tensorflow")
    return pytest.importorskip("keras")


@pytest.mark.tf
@pytest.mark.parametrize("mode", ["log", "magnitude", "psd", "real", "imag", "angle", "stft"])
@pytest.mark.parametrize("padding", ["valid", "same"])
def test_modes_and_paddings_as_keras(tfk, mode, padding):
    ours = np.asarray(_layer(flexflow_keras, mode=mode, padding=padding)(SIG))
    theirs = np.asarray(_layer(tfk, mode=mode, padding=padding)(SIG))
    assert ours.shape == theirs.shape
    if mode == "angle":  # arctan2 of near-zero parts: compare the unit vectors
        np.testing.assert_allclose(np.cos(ours), np.cos(theirs), atol=2e-4)
        np.testing.assert_allclose(np.sin(ours), np.sin(theirs), atol=2e-4)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=2e-5 * np.abs(theirs).max())


@pytest.mark.tf
def test_expand_dims_window_options_and_initializer_as_keras(tfk):
    kw = dict(mode="magnitude", expand_dims=True, padding="same", window="hamming", periodic=True,
              scaling="spectrum")
    ours, theirs = _layer(flexflow_keras, **kw), _layer(tfk, **kw)
    np.testing.assert_allclose(ours(SIG), theirs(SIG), rtol=1e-5, atol=1e-7)
    assert ours.compute_output_shape((None, 300, 2)) == tuple(theirs.compute_output_shape((None, 300, 2)))
    for side in ("real", "imag"):
        np.testing.assert_allclose(flexflow_keras.initializers.STFT(side, "hann", "density")((40, 1, 33)),
                                   tfk.initializers.STFT(side, "hann", "density")((40, 1, 33)), atol=1e-7)
    cfg = {k: v for k, v in ours.get_config().items() if k not in ("dtype", "name")}
    assert cfg == {k: v for k, v in theirs.get_config().items() if k not in ("dtype", "name")}
    assert type(flexflow_keras.layers.deserialize(flexflow_keras.layers.serialize(ours))).__name__ == "STFTSpectrogram"


def _fit(lib):
    inp = lib.Input((None, 1))
    spec = _layer(lib, mode="log", padding="same", expand_dims=True)(inp)
    out = lib.layers.Dense(3, activation="softmax")(lib.layers.GlobalMaxPooling2D()(spec))
    model = lib.Model(inp, out)
    model.set_weights([w if w.shape[0] == 40 else RS_W.randn(*w.shape).astype("float32") * 0.1
                       for w in model.get_weights()])
    model.compile(lib.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    hist = model.fit(SIG[:, :, :1], np.array([0, 2]), batch_size=2, epochs=2, shuffle=False, verbose=0)
    return hist.history["loss"], model.get_weights()


RS_W = np.random.RandomState(1)


@pytest.mark.tf
def test_a_trainable_spectrogram_fits_as_keras(tfk):
    global RS_W
    RS_W = np.random.RandomState(1)
    ours, w_ours = _fit(flexflow_keras)
    RS_W = np.random.RandomState(1)
    theirs, w_theirs = _fit(tfk)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    for a, b in zip(w_ours, w_theirs, strict=True):  # the STFT kernels trained too
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert not np.allclose(w_ours[0], flexflow_keras.initializers.STFT("real")((40, 1, 33)))


def test_channels_first_is_channels_last_transposed_and_open_length_predicts():
    last = _layer(flexflow_keras, mode="psd")(SIG)
    first = _layer(flexflow_keras, mode="psd", data_format="channels_first")(np.transpose(SIG, (0, 2, 1)))
    np.testing.assert_allclose(np.transpose(first, (0, 2, 1)), last, rtol=1e-6)
    model = flexflow_keras.Sequential([flexflow_keras.Input((None, 2)), _layer(flexflow_keras, trainable=False)])
    assert model.output_shape == (None, None, 66) and not model.trainable_weights
    for n in (300, 200):
        np.testing.assert_allclose(model.predict(SIG[:, :n], verbose=0), _layer(flexflow_keras)(SIG[:, :n]),
                                   rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="mode"):
        flexflow_keras.layers.STFTSpectrogram(mode="power")


def test_common_windows_need_no_scipy(monkeypatch):
    """hann, hamming, blackman, boxcar and bartlett are computed here (scipy is not a dependency); they equal
    scipy's, and another window without scipy is a clear error."""
    import sys

    scipy_signal = pytest.importorskip("scipy.signal")
    from flexflow_keras.initializers import _scipy_window

    want = {(n, p): scipy_signal.get_window(n, 16, p) for n in ("hann", "hamming", "blackman", "boxcar", "bartlett")
            for p in (False, True)}
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.signal", None)
    for (name, periodic), w in want.items():
        np.testing.assert_allclose(_scipy_window(name, 16, periodic), w, atol=1e-15)
    with pytest.raises(ValueError, match="needs scipy"):
        _scipy_window("tukey", 16, False)
