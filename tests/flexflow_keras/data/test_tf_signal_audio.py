"""tf.signal / tf.audio / complex numbers on the host (tf_signal.py) against TensorFlow 2.21's values (in the
comments and literals), and the raw-TensorFlow paths that reach them."""

import io
import wave

import numpy as np
import pytest

from flexflow_keras import tf_compat
from flexflow_keras import tf_signal as S
from flexflow_keras.errors import ArgumentError, DataError


def _signal():
    t = np.arange(600, dtype=np.float32)
    return np.stack([np.sin(0.05 * t), np.cos(0.013 * t) * 0.5]).astype(np.float32)


def test_stft_fft_and_complex_abs_match_tensorflow():
    x = _signal()
    s = np.asarray(S.stft(x, frame_length=200, frame_step=120, fft_length=256))
    assert s.shape == (2, 4, 129) and s.dtype == np.complex64
    assert np.abs(s).sum() == pytest.approx(794.8491, rel=1e-5)
    assert s[0, 1, 3] == pytest.approx(-16.29036 + 30.156368j, rel=1e-4)
    padded = np.asarray(S.stft(x, 100, 64, pad_end=True))  # fft_length: the next power of two, 128
    assert padded.shape == (2, 10, 65) and np.abs(padded).sum() == pytest.approx(844.79834, rel=1e-5)
    spectrum = np.asarray(S.fft(S.complex(x, np.zeros_like(x))))
    assert spectrum.dtype == np.complex64 and np.abs(spectrum).sum() == pytest.approx(2707.1924, rel=1e-5)
    magnitude = S.abs_(S.complex(np.float32([3.0]), np.float32([4.0])))
    assert magnitude.dtype == np.float32 and magnitude.tolist() == [5.0]
    assert np.abs(np.asarray(S.rfft(x, fft_length=[300]))).sum() == pytest.approx(734.0534, rel=1e-5)
    assert np.asarray(S.irfft(S.rfft(x[:, :10]))).shape == (2, 10)
    with pytest.raises(ArgumentError, match="complex tensor"):
        S.fft(x)


def test_frames_windows_and_mel_matrix_match_tensorflow():
    assert np.asarray(S.frame(np.arange(10), 4, 3)).tolist() == [[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9]]
    assert np.asarray(S.frame(np.arange(10), 4, 3, pad_end=True, pad_value=-1)).tolist()[-1] == [9, -1, -1, -1]
    assert np.asarray(S.frame(np.arange(12).reshape(6, 2), 3, 2, axis=0)).shape == (2, 3, 2)
    assert np.asarray(S.hann_window(5)).tolist() == [0.0, 0.5, 1.0, 0.5, 0.0]  # odd: periodic is symmetric
    np.testing.assert_allclose(np.asarray(S.hamming_window(4)), [0.08, 0.54, 1.0, 0.54], rtol=1e-6)
    mel = np.asarray(S.linear_to_mel_weight_matrix(8, 33, 16000, 20.0, 7000.0))
    assert mel.shape == (33, 8) and mel.sum() == pytest.approx(23.772758, rel=1e-5)
    assert not mel[0].any()  # the DC bin
    with pytest.raises(ArgumentError, match="upper_edge_hertz"):
        S.linear_to_mel_weight_matrix(8, 33, 16000, 20.0, 9000.0)


def _wav(samples, channels, rate=8000) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.asarray(samples, "<i2").tobytes())
    return buf.getvalue()


def test_decode_and_encode_wav_match_tensorflow():
    data = _wav([[0, 16384], [-32768, 32767], [100, -100]], 2)
    audio, rate = S.decode_wav(data)
    assert audio.dtype == np.float32 and rate.dtype == np.int32 and int(rate) == 8000
    assert np.asarray(audio).tolist() == [[0.0, 0.5], [-1.0, 0.999969482421875],
                                          [0.0030517578125, -0.0030517578125]]
    mono, _ = S.decode_wav(data, desired_channels=1, desired_samples=5)
    assert np.asarray(mono).ravel().tolist() == [0.0, -1.0, 0.0030517578125, 0.0, 0.0]
    again, _ = S.decode_wav(S.encode_wav(np.float32([[0.5], [-1.0], [0.25]]), 8000))
    assert np.asarray(again).ravel().tolist() == [0.5, -1.0, 0.25]
    with pytest.raises(DataError, match="not a readable WAV"):
        S.decode_wav(b"not a wav file")


def test_raw_tensorflow_paths_reach_them():
    assert tf_compat.mapped_call("tf.signal.stft") is S.stft
    assert tf_compat.mapped_call("tf.audio.decode_wav") is S.decode_wav
    assert tf_compat.mapped_call("tf.math.abs") is S.abs_ and tf_compat.mapped_call("tf.complex") is S.complex
    assert tf_compat.mapped_call("tf.signal.inverse_stft") is None  # stays refused, with the raw-TF message
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert np.asarray(tf_compat.mapped_call("tf.gather")(x, [2, 0])).tolist() == [x[2].tolist(), x[0].tolist()]
    np.testing.assert_allclose(tf_compat.mapped_call("tf.math.reduce_std")(x, 1, keepdims=True),
                               x.std(1, keepdims=True), rtol=1e-6)
    assert np.asarray(tf_compat.mapped_call("tf.abs")(np.float32([-2.0]))).tolist() == [2.0]


def test_symbolic_tensors_get_a_clear_error():
    import flexflow_keras as keras

    with pytest.raises(ArgumentError, match="input pipeline"):
        S.stft(keras.Input((1000,)), 256, 128)
