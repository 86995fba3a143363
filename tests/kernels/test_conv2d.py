"""conv2d CPU kernels against the float64 NumPy reference: forward, every gradient, both algorithms,
strides, TF "same" padding, fused activations, accumulate vs overwrite, chunking, threads, errors."""

import threading

import numpy as np
import pytest

from kernels import conv2d as K
from kernels.conv2d import (
    conv2d_backward_cpu,
    conv2d_backward_reference,
    conv2d_forward_cpu,
    conv2d_reference,
)

# (n, h, w, c_in, kh, kw, c_out, strides, padding)
GEOMETRIES = [
    (2, 7, 6, 3, 3, 3, 4, (1, 1), "valid"),
    (2, 7, 6, 3, 3, 2, 5, (2, 1), "same"),
    (3, 5, 5, 1, 3, 3, 4, (2, 2), "same"),  # single channel 3x3: the direct forward
    (2, 6, 7, 1, 3, 3, 5, (1, 2), "valid"),
    (2, 6, 6, 2, 1, 1, 3, (1, 1), "valid"),
    (1, 8, 8, 4, 2, 2, 3, (1, 1), "same"),  # even kernel: the extra pad row/col goes bottom/right
    (1, 9, 7, 2, 5, 5, 3, (2, 3), "same"),
    (2, 10, 10, 6, 3, 3, 8, (3, 3), "valid"),  # stride leaves the last rows/cols unread
    (3, 7, 6, 32, 3, 3, 32, (1, 1), "same"),  # Winograd: odd output height, partial tiles
    (2, 9, 8, 33, 3, 3, 34, (1, 1), "valid"),  # Winograd: odd output width
    (2, 13, 11, 24, 3, 3, 32, (1, 1), "same"),  # F(4x4, 3x3): partial 4x4 tiles on both edges
    (2, 12, 14, 32, 3, 3, 48, (1, 1), "valid"),  # F(4x4, 3x3): 10x12 output, the last tile row cut
]
WINOGRAD = GEOMETRIES[-4:]


def _data(rng, n, h, w, c, kh, kw, co):
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    k = (rng.standard_normal((kh, kw, c, co)) / np.sqrt(kh * kw * c)).astype(np.float32)
    b = rng.standard_normal(co).astype(np.float32) * 0.1
    return x, k, b


def _close(got, want, what):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5 * scale, err_msg=what)


def _check(geometry, activation="relu", algorithm="auto", use_bias=True, seed=0):
    n, h, w, c, kh, kw, co, strides, padding = geometry
    rng = np.random.default_rng(seed)
    x, k, b = _data(rng, n, h, w, c, kh, kw, co)
    b = b if use_bias else None
    want = conv2d_reference(x, k, b, strides, padding, activation)
    out = np.full(want.shape, np.nan, np.float32)
    pre = np.empty_like(out) if K.needs_pre_activation(activation) else None
    conv2d_forward_cpu(x, k, b, out, strides, padding, activation, pre_activation=pre, algorithm=algorithm)
    _close(out, want, f"forward {geometry} {activation} {algorithm}")
    gy = rng.standard_normal(want.shape).astype(np.float32)
    dx, dk, db = conv2d_backward_reference(x, k, b, gy, strides, padding, activation)
    gx = np.full(x.shape, np.nan, np.float32)
    gk = np.full(k.shape, np.nan, np.float32)
    gb = np.full(k.shape[-1], np.nan, np.float32) if use_bias else None
    conv2d_backward_cpu(x, k, out, gy, gx, gk, gb, strides, padding, activation, pre_activation=pre,
                        algorithm="auto" if algorithm == "direct" else algorithm)
    _close(gx, dx, f"grad_x {geometry} {activation}")
    _close(gk, dk, f"grad_kernel {geometry} {activation}")
    if use_bias:
        _close(gb, db, f"grad_bias {geometry} {activation}")


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_forward_backward_match_reference(geometry):
    _check(geometry)


@pytest.mark.parametrize("geometry", [GEOMETRIES[2], GEOMETRIES[3]])
def test_gemm_and_direct_agree_on_single_channel(geometry):
    _check(geometry, algorithm="gemm")
    _check(geometry, algorithm="direct")


@pytest.mark.parametrize("geometry", WINOGRAD)
@pytest.mark.parametrize("algorithm", ["gemm", "winograd", "winograd4"])
def test_gemm_and_winograd_agree(geometry, algorithm):
    _check(geometry, algorithm=algorithm)


@pytest.mark.parametrize("activation", [None, "linear", "sigmoid", "tanh", "elu", "gelu", "silu"])
def test_fused_activations(activation):
    _check(GEOMETRIES[1], activation=activation)
    _check(GEOMETRIES[2], activation=activation)  # the direct path's epilogue
    _check(WINOGRAD[0], activation=activation)
    # F(4x4, 3x3)'s epilogue and dZ: "auto" leaves these few pixels on im2col + GEMM (WINOGRAD_MIN_PIXELS)
    _check(WINOGRAD[0], activation=activation, algorithm="winograd4")


def test_no_bias():
    _check(GEOMETRIES[0], use_bias=False)
    _check(GEOMETRIES[2], use_bias=False)
    _check(WINOGRAD[1], use_bias=False)
    _check(WINOGRAD[1], use_bias=False, algorithm="winograd4")


def test_many_chunks(monkeypatch):
    monkeypatch.setattr(K, "CHUNK_BYTES", 512)  # a few output lines per chunk
    monkeypatch.setattr(K, "MIN_CHUNK_ROWS", 1)  # the forward's too
    monkeypatch.setattr(K, "WINOGRAD_TILES", 5)  # one or two tile rows per Winograd chunk
    monkeypatch.setattr(K, "WINOGRAD4_TILES", 3)
    monkeypatch.setattr(K, "WINOGRAD4_BACKWARD_TILES", 3)
    monkeypatch.setattr(K, "WINOGRAD_SAMPLES", 2)
    for geometry in (GEOMETRIES[0], GEOMETRIES[1], GEOMETRIES[6], *WINOGRAD):
        _check(geometry)
    for geometry in WINOGRAD:
        _check(geometry, algorithm="winograd4")


def test_deep_im2col_forward_chunks_keep_min_rows(monkeypatch):
    g = K.conv_geometry((32, 64, 64, 512), (4, 4, 512, 256), 2, "same")  # depth 8192: 1 MiB is 32 pixels
    assert K._chunk_lines(g, 4) * g.ow == 32
    assert K._chunk_lines(g, 4, min_rows=K.MIN_CHUNK_ROWS) * g.ow >= K.MIN_CHUNK_ROWS
    g = K.conv_geometry((32, 16, 16, 128), (4, 4, 128, 128), 2, "same")  # 128 pixels a chunk: kept
    assert K._chunk_lines(g, 4, min_rows=K.MIN_CHUNK_ROWS) == K._chunk_lines(g, 4) == 16
    monkeypatch.setattr(K, "CHUNK_BYTES", 512)
    monkeypatch.setattr(K, "MIN_CHUNK_ROWS", 17)  # chunks of five 4-pixel lines of 12: the last one partial
    _check((3, 7, 8, 6, 4, 4, 5, (2, 2), "same"), activation="linear")

# The F(4x4, 3x3) backward (grad input as the forward's adjoint, tiles overlapping by two rows and columns,
# each value stored where first written and added after): odd sizes, partial tiles on every edge, "same"
# and explicit pads (asymmetric, and 3 or 4 on a side: tiles wholly in the padding), 1-3 samples.
WINOGRAD4_BACKWARD = [
    (3, 9, 11, 5, 3, 3, 7, (1, 1), "valid"),  # 7x9 output: last tile row and column cut
    (2, 13, 10, 3, 3, 3, 6, (1, 1), "same"),
    (2, 10, 9, 8, 3, 3, 16, (1, 1), ((2, 0), (1, 2))),
    (3, 7, 8, 6, 3, 3, 5, (1, 1), ((3, 1), (0, 4))),
    (1, 6, 6, 4, 3, 3, 4, (1, 1), "valid"),  # one 4x4 tile per sample
]


@pytest.mark.parametrize("geometry", WINOGRAD4_BACKWARD)
@pytest.mark.parametrize("tiles", [1, 7, 1000])  # a tile row per chunk; chunks across samples; one chunk
def test_winograd4_backward_matches_reference(monkeypatch, geometry, tiles):
    monkeypatch.setattr(K, "WINOGRAD4_BACKWARD_TILES", tiles)
    for activation in ("relu", "linear", "gelu"):
        _check(geometry, activation=activation, algorithm="winograd4")
    _check(geometry, algorithm="winograd4", use_bias=False)


@pytest.mark.parametrize("geometry", WINOGRAD4_BACKWARD[1:3])
def test_winograd4_backward_accumulates_and_writes_only_what_is_asked(monkeypatch, geometry):
    monkeypatch.setattr(K, "WINOGRAD4_BACKWARD_TILES", 5)
    n, h, w, c, kh, kw, co, strides, padding = geometry
    rng = np.random.default_rng(5)
    x, k, b = _data(rng, n, h, w, c, kh, kw, co)
    out = np.empty(conv2d_reference(x, k, b, strides, padding).shape, np.float32)
    conv2d_forward_cpu(x, k, b, out, strides, padding, "relu", algorithm="winograd4")
    gy = rng.standard_normal(out.shape).astype(np.float32)
    dx, dk, db = conv2d_backward_reference(x, k, b, gy, strides, padding, "relu")
    base = [rng.standard_normal(a.shape).astype(np.float32) for a in (x, k, b)]
    got = [a.copy() for a in base]
    conv2d_backward_cpu(x, k, out, gy, *got, strides, padding, "relu", accumulate_x=True,
                        accumulate_kernel=True, accumulate_bias=True, algorithm="winograd4")
    names = ("grad_x", "grad_kernel", "grad_bias")
    for what, g, want, b0 in zip(names, got, (dx, dk, db), base, strict=True):
        _close(g, b0 + want, f"accumulated {what}")
    for i, (what, want) in enumerate(zip(names, (dx, dk, db), strict=True)):
        only = [None, None, None]
        only[i] = np.full(base[i].shape, np.nan, np.float32)
        conv2d_backward_cpu(x, k, out, gy, *only, strides, padding, "relu", algorithm="winograd4")
        _close(only[i], want, f"{what} alone")


@pytest.mark.parametrize("simd", [False, True])
@pytest.mark.parametrize("chunk_bytes", [None, 512])  # one chunk; many (the kernel gradient's float64 fold)
def test_im2col_backward_on_both_gemm_paths(monkeypatch, simd, chunk_bytes):
    """The im2col grad input multiplies dZ by the kernel matrix read transposed by BLAS, or, on AVX-512
    hosts, by its transposed copy for the vector micro-kernels: a host runs one of them, so both are set
    here (the micro-kernels' vector IR runs on any host). Depth 144 and 32 channels take the micro-kernels."""
    from kernels import _conv_simd

    monkeypatch.setattr(_conv_simd, "ENABLED", simd)
    if chunk_bytes is not None:
        monkeypatch.setattr(K, "CHUNK_BYTES", chunk_bytes)
    for geometry in ((2, 9, 8, 16, 3, 3, 32, (1, 1), "same"), GEOMETRIES[1]):
        _check(geometry, algorithm="gemm")
        _check(geometry, activation="linear", algorithm="gemm", use_bias=False)


@pytest.mark.parametrize("geometry", [GEOMETRIES[1], GEOMETRIES[2], WINOGRAD[0]])
def test_accumulate_adds_and_overwrite_replaces(geometry):
    n, h, w, c, kh, kw, co, strides, padding = geometry
    rng = np.random.default_rng(1)
    x, k, b = _data(rng, n, h, w, c, kh, kw, co)
    out = np.empty(conv2d_reference(x, k, b, strides, padding).shape, np.float32)
    conv2d_forward_cpu(x, k, b, out, strides, padding, "relu")
    gy = rng.standard_normal(out.shape).astype(np.float32)
    dx, dk, db = conv2d_backward_reference(x, k, b, gy, strides, padding, "relu")
    base = [rng.standard_normal(a.shape).astype(np.float32) for a in (x, k, b)]
    gx, gk, gb = (a.copy() for a in base)
    conv2d_backward_cpu(x, k, out, gy, gx, gk, gb, strides, padding, "relu", accumulate_x=True,
                        accumulate_kernel=True, accumulate_bias=True)
    _close(gx, base[0] + dx, "accumulated grad_x")
    _close(gk, base[1] + dk, "accumulated grad_kernel")
    _close(gb, base[2] + db, "accumulated grad_bias")
    gx, gk, gb = (a.copy() for a in base)
    conv2d_backward_cpu(x, k, out, gy, gx, gk, gb, strides, padding, "relu")
    _close(gx, dx, "overwritten grad_x")
    _close(gk, dk, "overwritten grad_kernel")
    _close(gb, db, "overwritten grad_bias")


@pytest.mark.parametrize("geometry", [GEOMETRIES[0], GEOMETRIES[3], WINOGRAD[1]])
def test_only_requested_gradients_are_touched(geometry):
    n, h, w, c, kh, kw, co, strides, padding = geometry
    rng = np.random.default_rng(2)
    x, k, b = _data(rng, n, h, w, c, kh, kw, co)
    out = conv2d_reference(x, k, b, strides, padding).astype(np.float32)
    gy = rng.standard_normal(out.shape).astype(np.float32)
    dx, dk, db = conv2d_backward_reference(x, k, b, gy, strides, padding)
    gk = np.empty_like(k)
    conv2d_backward_cpu(x, k, out, gy, None, gk, None, strides, padding)
    _close(gk, dk, "grad_kernel alone")
    gx = np.empty_like(x)
    conv2d_backward_cpu(x, k, out, gy, gx, None, None, strides, padding)
    _close(gx, dx, "grad_x alone")
    gb = np.empty_like(b)
    conv2d_backward_cpu(x, k, out, gy, None, None, gb, strides, padding)
    _close(gb, db, "grad_bias alone")


def test_float64():
    n, h, w, c, kh, kw, co, strides, padding = GEOMETRIES[1]
    rng = np.random.default_rng(3)
    x, k, b = (a.astype(np.float64) for a in _data(rng, n, h, w, c, kh, kw, co))
    want = conv2d_reference(x, k, b, strides, padding, "tanh")
    out = np.empty(want.shape)
    conv2d_forward_cpu(x, k, b, out, strides, padding, "tanh")
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


def test_concurrent_threads_use_private_workspaces():
    rng = np.random.default_rng(4)
    jobs = []
    for geometry in (GEOMETRIES[0], GEOMETRIES[6]):
        n, h, w, c, kh, kw, co, strides, padding = geometry
        x, k, b = _data(rng, 8 * n, h, w, c, kh, kw, co)
        want = conv2d_reference(x, k, b, strides, padding, "relu")
        jobs.append((x, k, b, strides, padding, want))
    errors = []

    def work(x, k, b, strides, padding, want):
        out = np.empty(want.shape, np.float32)
        for _ in range(20):
            conv2d_forward_cpu(x, k, b, out, strides, padding, "relu")
            if not np.allclose(out, want, rtol=1e-4, atol=1e-4):
                errors.append(padding)

    threads = [threading.Thread(target=work, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_algorithm_rule():
    g = K.conv_geometry((64, 28, 28, 1), (3, 3, 1, 32))
    assert K.choose_cpu_algorithm(g, "forward") == "direct"
    assert K.choose_cpu_algorithm(g, "backward") == "gemm"
    g2 = K.conv_geometry((64, 26, 26, 32), (3, 3, 32, 64))
    assert K.choose_cpu_algorithm(g2, "forward") == "winograd4"
    assert K.choose_cpu_algorithm(g2, "backward") == "winograd4"
    g6 = K.conv_geometry((64, 4, 4, 128), (3, 3, 128, 128), padding="same")  # small: 4x4 tiles waste work
    assert K.choose_cpu_algorithm(g6, "backward") == "gemm"
    g3 = K.conv_geometry((64, 26, 26, 32), (3, 3, 32, 64), strides=2)
    assert K.choose_cpu_algorithm(g3, "forward") == "gemm"
    g4 = K.conv_geometry((64, 32, 32, 3), (3, 3, 3, 32))
    assert K.choose_cpu_algorithm(g4, "forward") == "gemm"
    g5 = K.conv_geometry((64, 32, 32, 12), (3, 3, 12, 32))
    assert K.choose_cpu_algorithm(g5, "backward") == "winograd4"
    g7 = K.conv_geometry((64, 5, 5, 12), (3, 3, 12, 32), padding="same")
    assert K.choose_cpu_algorithm(g7, "backward") == "gemm"


def test_few_pixels_with_many_channels_stay_on_gemm():
    """The kernel's Winograd transforms cost the same whatever the batch: a ResNet's last stage on 32x32
    images (8 samples, 3x3 -> 1x1 of 512 channels) ran 30x slower on them than im2col + GEMM."""
    for shape in ((8, 3, 3, 512), (8, 8, 8, 512), (4, 10, 10, 256)):
        g = K.conv_geometry(shape, (3, 3, shape[3], shape[3]))
        assert K.choose_cpu_algorithm(g, "forward") == "gemm", shape
        assert K.choose_cpu_algorithm(g, "backward") == "gemm", shape
    g = K.conv_geometry((8, 10, 10, 256), (3, 3, 256, 256))  # 8x8 outputs of 8 samples: 512 pixels
    assert K.choose_cpu_algorithm(g, "backward") == "winograd4"


def test_geometry_follows_tf_same_padding():
    g = K.conv_geometry((1, 8, 7, 1), (2, 3, 1, 1), (2, 2), "same")
    assert (g.oh, g.ow) == (4, 4)
    assert (g.pt, g.pl) == (0, 1)  # total pads 0 and 2: the odd one goes to the bottom/right


@pytest.mark.parametrize("call, message", [
    (lambda: K.conv_geometry((1, 5, 5, 3), (3, 3, 2, 4)), "3 channels"),
    (lambda: K.conv_geometry((1, 5, 5), (3, 3, 5, 4)), "rank 4"),
    (lambda: K.conv_geometry((1, 5, 5, 3), (3, 3, 3, 4), padding="full"), "padding"),
    (lambda: K.conv_geometry((1, 5, 5, 3), (3, 3, 3, 4), strides=0), "strides"),
    (lambda: K.conv_geometry((1, 2, 5, 3), (3, 3, 3, 4)), "padding='same'"),
])
def test_geometry_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_buffer_errors():
    x = np.zeros((1, 5, 5, 2), np.float32)
    k = np.zeros((3, 3, 2, 4), np.float32)
    with pytest.raises(ValueError, match="out must have shape"):
        conv2d_forward_cpu(x, k, None, np.empty((1, 3, 3, 3), np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        conv2d_forward_cpu(x, k, None, np.empty((1, 3, 3, 8), np.float32)[..., ::2])
    with pytest.raises(ValueError, match="pre_activation"):
        conv2d_forward_cpu(x, k, None, np.empty((1, 3, 3, 4), np.float32), activation="gelu")
    with pytest.raises(ValueError, match="algorithm='direct'"):
        conv2d_forward_cpu(x, k, None, np.empty((1, 3, 3, 4), np.float32), algorithm="direct")
    with pytest.raises(ValueError, match="algorithm='winograd'"):
        conv2d_forward_cpu(x, k, None, np.empty((1, 2, 2, 4), np.float32), strides=2, algorithm="winograd")
    with pytest.raises(ValueError, match="Unknown activation"):
        conv2d_forward_cpu(x, k, None, np.empty((1, 3, 3, 4), np.float32), activation="nope")
