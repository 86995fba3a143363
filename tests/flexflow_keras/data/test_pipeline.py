"""The loader pipeline: the ring lives in zero-copy memory (bounded by -ll:zsize), batches equal a plain
NumPy gather in the epoch's order whether decoder processes or loader threads decode, the order is a
function of (seed, epoch), the data wait is measured and reported, and decoder processes end with the
pipeline or name themselves when they die."""

import logging
import os
import signal
import time

import numpy as np
import pytest
from PIL import Image

from flexflow_keras.data import pipeline
from flexflow_keras.data.decoders import processes_supported
from flexflow_keras.data.images import ImageFolderSource, index_image_folder
from flexflow_keras.data.order import epoch_order
from flexflow_keras.data.pipeline import BatchRing, LoaderPipeline
from flexflow_keras.errors import ConfigError, DataError
from runtime import Machine, MemKind, Runtime


@pytest.fixture(params=["threaded", "sequential"])
def rtm(request):
    r = Runtime(Machine(cpus=2, zsize=16), executor=request.param)
    yield r
    r.shutdown()


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    root = tmp_path_factory.mktemp("imgs")
    rng = np.random.default_rng(1)
    for c in range(3):
        (root / f"c{c}").mkdir()
        for i in range(7):
            Image.fromarray(rng.integers(0, 256, (5, 4), dtype=np.uint8), "L").save(root / f"c{c}" / f"{i}.png")
    paths, labels, names = index_image_folder(root)
    return ImageFolderSource(paths, labels, names, (5, 4), 1)


def test_epoch_order_is_a_function_of_seed_and_epoch():
    a = epoch_order(100, 7, 3)
    np.testing.assert_array_equal(a, epoch_order(100, 7, 3))
    assert sorted(a.tolist()) == list(range(100))
    assert not np.array_equal(a, epoch_order(100, 7, 4)) and not np.array_equal(a, epoch_order(100, 8, 3))
    np.testing.assert_array_equal(epoch_order(10, 7, 3, shuffle=False), np.arange(10))
    chunks = epoch_order(10, 1, 0, "batch", 4).reshape(-1)
    assert sorted(chunks.tolist()) == list(range(10))


def test_ring_lives_in_zero_copy_memory(rtm):
    before = rtm.memory_usage()["zcmem"][0]
    ring = BatchRing(rtm, 8, [((5, 4, 1), np.float32)], [((), np.int32)], max_depth=3)
    used = rtm.memory_usage()["zcmem"][0] - before
    assert ring.depth == 3 and used == 3 * ring.slot_bytes == 3 * 8 * (20 * 4 + 4 + 4)
    ring.close()
    assert rtm.memory_usage()["zcmem"][0] == before


def test_zsize_that_cannot_hold_two_batches_is_a_config_error():
    rtm = Runtime(Machine(cpus=1, zsize=1))
    try:
        with pytest.raises(ConfigError, match=r"-ll:zsize 1 MB holds 0 batches of 64 x \(224, 224, 3\) float32 = "
                                              r"36\.8 MB .*at least 74 MB is needed for 2 batches: pass -ll:zsize 7"):
            BatchRing(rtm, 64, [((224, 224, 3), np.float32)], [((), np.int32)])
        assert rtm.memory_usage()["zcmem"][0] == 0
    finally:
        rtm.shutdown()


needs_fork = pytest.mark.skipif(not processes_supported(), reason="decoder processes are forked (Linux)")
DECODERS = [pytest.param(True, id="processes", marks=needs_fork), pytest.param(False, id="threads")]


@pytest.mark.parametrize("processes", DECODERS)
def test_batches_equal_a_numpy_gather_in_the_epoch_order(rtm, source, processes):
    labels = source.labels
    pipe = LoaderPipeline(rtm, source, [labels], batch_size=4, processes=processes)
    assert pipe.depth >= 2 and (pipe.decoders is not None) == processes
    everything = source.load()
    for epoch in range(2):
        order = epoch_order(source.num_samples, 5, epoch)
        batches = [order[i:i + 4] for i in range(0, len(order), 4)]
        pipe.start_epoch(batches)
        for b, rows in enumerate(batches):
            sources, got_rows = pipe.take(b)
            np.testing.assert_array_equal(got_rows, np.arange(len(rows)))
            x, y, sw = sources
            np.testing.assert_array_equal(x, everything[rows])
            np.testing.assert_array_equal(y, labels[rows])
            assert np.all(sw == 1.0) and len(sw) == len(rows)
            assert any(np.shares_memory(x, slot[0][0]) for slot in pipe.ring.slots)  # read in place
            pipe.consumed(b, None)
        pipe.end_epoch(epoch, 1.0)
    pipe.close()


class _SlowReader:
    sample_shape = (2,)

    def __init__(self, delay):
        self.delay = delay

    def read_x(self, rows, out):
        time.sleep(self.delay)
        out[...] = np.asarray(rows)[:, None]


def test_the_wait_is_measured_and_reported_once_per_epoch(rtm, caplog, monkeypatch):
    if rtm.executor_name == "sequential":
        pytest.skip("the sequential executor decodes at issue time: there is never a wait")
    monkeypatch.setattr(pipeline, "STALL_MIN_S", 0.0)  # the fraction rule alone (the floor: next test)
    pipe = LoaderPipeline(rtm, _SlowReader(0.05), [np.arange(8, dtype=np.int32)], batch_size=2, cpus=2)
    pipe.start_epoch([np.array([0, 1]), np.array([2, 3]), np.array([4, 5])])
    for b in range(3):
        pipe.take(b)
        pipe.consumed(b, None)
    assert pipe.wait_s >= 0.04  # at least the first batch's decoding was waited for
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        stall = pipe.end_epoch(0, pipe.wait_s * 2)
        calm = pipe.end_epoch(1, pipe.wait_s * 1000)
    assert stall.fired and not calm.fired and abs(stall.fraction - 0.5) < 1e-9
    reports = [r.getMessage() for r in caplog.records if "data stall" in r.getMessage()]
    assert len(reports) == 1
    assert "epoch 1" in reports[0] and "-ll:cpu (now 2" in reports[0] and "-ll:zsize (now 16 MB" in reports[0]
    pipe.close()


def test_a_short_wait_is_no_stall_whatever_its_fraction(rtm, caplog):
    # A tiny epoch's jitter ("waited 0.00 s of 0.03 s") is not reported: the floor is STALL_MIN_S.
    pipe = LoaderPipeline(rtm, _SlowReader(0.0), [np.arange(8, dtype=np.int32)], batch_size=2, cpus=2)
    pipe.start_epoch([np.array([0, 1])])
    pipe.take(0)
    pipe.consumed(0, None)
    pipe.wait_s = pipeline.STALL_MIN_S / 2
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        short = pipe.end_epoch(0, pipe.wait_s * 2)
        pipe.wait_s = pipeline.STALL_MIN_S * 2
        long = pipe.end_epoch(1, pipe.wait_s * 2)
    assert not short.fired and long.fired and short.fraction == long.fraction == 0.5
    assert sum("data stall" in r.getMessage() for r in caplog.records) == 1
    pipe.close()


@pytest.mark.parametrize("processes", DECODERS)
def test_a_bad_image_in_a_loader_task_is_the_data_error(rtm, source, tmp_path, processes):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not a png")
    broken = ImageFolderSource([str(bad)] + source.paths[:3], np.zeros(4, np.int32), ["c"], (5, 4), 1)
    pipe = LoaderPipeline(rtm, broken, [broken.labels], batch_size=4, processes=processes)
    pipe.start_epoch([np.arange(4)])
    with pytest.raises(DataError, match=r"Cannot decode image .*bad.png.*sample 0.*Remove or replace the file"):
        pipe.take(0)
    pipe.close()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@needs_fork
def test_decoder_processes_end_with_the_pipeline(source):
    rtm = Runtime(Machine(cpus=2, zsize=16))
    try:
        pipe = LoaderPipeline(rtm, source, [source.labels], batch_size=4)
        pids = list(pipe.decoders.pids)
        assert len(pids) == 2 and not any(_gone(p) for p in pids)
        pipe.start_epoch([np.arange(4), np.arange(4, 8), np.arange(8, 12)])
        pipe.take(0)  # close with batches still in flight: their decodes are waited for, then the processes end
        pipe.close()
        assert all(_gone(p) for p in pids)  # reaped: no zombies left either
    finally:
        rtm.shutdown()


@needs_fork
def test_a_decoder_that_dies_is_named_with_its_exit_status(source):
    rtm = Runtime(Machine(cpus=1, zsize=16))
    try:
        pipe = LoaderPipeline(rtm, source, [source.labels], batch_size=4)
        pid = pipe.decoders.pids[0]
        os.kill(pid, signal.SIGKILL)
        pipe.start_epoch([np.arange(4)])
        with pytest.raises(DataError, match=rf"image decoder process 0 \(pid {pid}\) .*exit status -9.*lower "
                                            r"-b/--batch-size or -ll:cpu"):
            pipe.take(0)
        pipe.close()
    finally:
        rtm.shutdown()


def test_ring_uses_the_runtime_allocator():
    rtm = Runtime(Machine(cpus=1, zsize=4))
    try:
        a, release = rtm.allocate(MemKind.ZERO_COPY, (1024, 256), np.float32, "probe")
        assert rtm.memory_usage()["zcmem"][0] == a.nbytes == 1 << 20
        release()
        assert rtm.memory_usage()["zcmem"][0] == 0
    finally:
        rtm.shutdown()


def _flip_map():
    from flexflow_keras import layers

    flip = layers.RandomFlip("horizontal", seed=3)
    return lambda xs, ys: ([np.asarray(flip(xs[0]))], ys)


@needs_fork
def test_a_map_that_keeps_shapes_runs_in_the_decoders_on_whole_batches_each_drawing_its_own(source):
    rtm = Runtime(Machine(cpus=2, zsize=16))
    try:
        batch = 8
        pipe = LoaderPipeline(rtm, source, [source.labels], batch_size=batch, transform=_flip_map())
        assert pipe.map_in_decoders and pipe.depth == 3  # -ll:cpu + 1 batches: both decoders busy, one read
        rows = np.arange(2 * batch)
        pipe.start_epoch([rows[:batch], rows[batch:]])  # batch 0 to decoder 0, batch 1 to decoder 1
        patterns = []
        for b in range(2):
            (x, y, _), _ = pipe.take(b)
            plain = source.load(rows[b * batch:(b + 1) * batch])
            flipped = [not np.array_equal(a, p) for a, p in zip(x, plain, strict=True)]
            assert all(np.array_equal(a, p[:, ::-1]) for a, p, f in zip(x, plain, flipped, strict=True) if f)
            np.testing.assert_array_equal(y, source.labels[rows[b * batch:(b + 1) * batch]])
            patterns.append(flipped)
            pipe.consumed(b, None)
        # each decoder's first call of the layer: the same draws unless each has its own stream
        assert patterns[0] != patterns[1] and any(patterns[0] + patterns[1])
        pipe.close()
    finally:
        rtm.shutdown()


@needs_fork
def test_a_map_that_changes_shapes_runs_on_the_program_thread(source):
    rtm = Runtime(Machine(cpus=2, zsize=16))
    try:
        crop = lambda xs, ys: ([xs[0][:, :2].copy()], [(ys[0] * 10).astype(np.int64)])  # noqa: E731
        pipe = LoaderPipeline(rtm, source, [source.labels], batch_size=4, transform=crop)
        assert pipe.decoders is not None and not pipe.map_in_decoders
        pipe.start_epoch([np.arange(4)])
        (x, y, _), _ = pipe.take(0)
        np.testing.assert_array_equal(x, source.load(np.arange(4))[:, :2])
        np.testing.assert_array_equal(y, source.labels[:4] * 10)
        pipe.close()
    finally:
        rtm.shutdown()


@needs_fork
def test_a_map_failing_in_a_decoder_names_itself(source):
    def picky(xs, ys):
        if xs[0].max() > 0:  # the probe's zeros pass; real images fail in the decoder
            raise ZeroDivisionError("picky map")
        return xs, ys

    rtm = Runtime(Machine(cpus=1, zsize=16))
    try:
        pipe = LoaderPipeline(rtm, source, [source.labels], batch_size=4, transform=picky)
        assert pipe.map_in_decoders
        pipe.start_epoch([np.arange(4)])
        with pytest.raises(DataError, match=r"decoder process 0 failed: ZeroDivisionError in the dataset's map: "
                                            r"picky map"):
            pipe.take(0)
        pipe.close()
    finally:
        rtm.shutdown()
