"""tf.io / tf.image on the host (flexflow_keras/tf_io.py, tf_image.py) against TensorFlow itself, on generated files,
and the TensorFlow image-loading tutorial's pipeline under `python -m flexflow_keras`."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from flexflow_keras import tf_image as T
from flexflow_keras import tf_io as IO
from flexflow_keras.data.slices import SliceDataset
from flexflow_keras.errors import ArgumentError, DataError

Image = pytest.importorskip("PIL.Image")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("imgs")
    rng = np.random.default_rng(0)
    rgb = np.cumsum((rng.random((37, 29, 3)) * 40).astype(np.uint8), axis=1).astype(np.uint8)
    out = {"jpg": d / "a.jpg", "png": d / "b.png", "gray": d / "c.png", "pal": d / "d.png", "gif": d / "e.gif",
           "g16": d / "f.png", "bmp": d / "g.bmp", "rgba": d / "h.png"}
    Image.fromarray(rgb).save(out["jpg"], quality=90)
    Image.fromarray(rgb).save(out["png"])
    Image.fromarray(rgb[:, :, 0]).save(out["gray"])
    Image.fromarray(rgb).convert("P").save(out["pal"])
    frames = [Image.fromarray(np.roll(rgb, k, axis=0)) for k in range(3)]
    frames[0].save(out["gif"], save_all=True, append_images=frames[1:])
    Image.fromarray((rng.random((12, 9)) * 65535).astype(np.uint16)).save(out["g16"])
    Image.fromarray(rgb).save(out["bmp"])
    Image.fromarray(np.concatenate([rgb, rgb[:, :, :1]], axis=2)).save(out["rgba"])
    return out


def test_read_file_gives_the_bytes_and_missing_files_are_clear(files, tmp_path):
    b = IO.read_file(str(files["png"]))
    assert np.asarray(b).shape == ()
    assert np.asarray(b).item() == files["png"].read_bytes()
    with pytest.raises(DataError, match="read_file.*nope.png"):
        IO.read_file(str(tmp_path / "nope.png"))
    with pytest.raises(DataError, match="cannot decode"):
        IO.decode_png(np.asarray(b"not an image", dtype=object))
    with pytest.raises(ArgumentError, match="one file's contents"):
        IO.decode_image(np.asarray([b"a", b"b"], dtype=object))


def test_string_tensors_compare_with_str_arrays():
    parts = T._out(np.asarray([b"data", b"cat", b"x.jpg"], dtype=object))
    np.testing.assert_array_equal(parts[-2] == np.array(["cat", "dog"]), [True, False])
    np.testing.assert_array_equal(parts != "cat", [True, False, True])


def test_list_files_sorts_and_shuffles_unless_asked(files):
    pattern = os.path.join(os.path.dirname(files["png"]), "*.png")
    listed = [v for v in SliceDataset.list_files(pattern, shuffle=False).as_numpy_iterator()]
    assert listed == sorted(str(p).encode() for p in files.values() if str(p).endswith(".png"))
    shuffled = [v for v in SliceDataset.list_files(pattern, seed=3).as_numpy_iterator()]
    assert sorted(shuffled) == listed
    with pytest.raises(DataError, match="no files matched"):
        SliceDataset.list_files(pattern + ".none")


def test_resize_refuses_what_it_does_not_compute():
    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(ArgumentError, match="lanczos3"):
        T.resize(img, [2, 2], method="lanczos3")
    with pytest.raises(ArgumentError, match="antialias"):
        T.resize(img, [2, 2], antialias=True)
    assert np.asarray(T.resize(img, [2, 3])).dtype == np.float32
    assert np.asarray(T.resize(img, [2, 3], method="nearest")).dtype == np.uint8


@pytest.mark.tf
def test_decoding_and_image_ops_match_tensorflow(files):
    tf = pytest.importorskip("tensorflow")

    def same(ours, theirs, atol=0.0, what=""):
        ours, theirs = np.asarray(ours), np.asarray(theirs)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
        np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), atol=atol, err_msg=what)

    for key in ("png", "gray", "pal", "gif", "g16", "bmp", "rgba"):
        b = tf.io.read_file(str(files[key]))
        ours = IO.read_file(str(files[key]))
        for ch in (0, 1, 3, 4):
            if key in ("gif", "bmp") and ch in (1, 4):
                continue
            luma = 1.0 if ch == 1 and key in ("png", "pal", "rgba") else 0.0  # libpng's gamma path: within 1
            same(IO.decode_image(ours, channels=ch, expand_animations=False),
                 tf.io.decode_image(b, channels=ch, expand_animations=False), luma, f"{key}:{ch}")
        if key.endswith("png") or key in ("gray", "pal", "g16", "rgba"):
            same(IO.decode_png(ours, dtype="uint16"), tf.io.decode_png(b, dtype=tf.uint16), 0.0, f"{key}:16")
    gif = tf.io.read_file(str(files["gif"]))
    same(IO.decode_gif(IO.read_file(str(files["gif"]))), tf.io.decode_gif(gif), 0.0, "gif frames")
    same(IO.decode_image(IO.read_file(str(files["gif"]))), tf.io.decode_image(gif), 0.0, "gif animations")
    jpg, ours_jpg = tf.io.read_file(str(files["jpg"])), IO.read_file(str(files["jpg"]))
    for ch in (0, 1, 3):
        same(IO.decode_jpeg(ours_jpg, channels=ch), tf.io.decode_jpeg(jpg, channels=ch, dct_method="INTEGER_ACCURATE"),
             0.0, f"jpeg:{ch}")
    same(IO.decode_image(ours_jpg, dtype="float32"), tf.io.decode_image(jpg, dtype=tf.float32, channels=3,
                                                                        expand_animations=False), 8 / 255, "jpeg f32")

    img = np.asarray(IO.decode_png(IO.read_file(str(files["png"]))))
    timg = tf.constant(img)
    f = np.asarray(T.convert_image_dtype(img, "float32"))
    tf_f = tf.image.convert_image_dtype(timg, tf.float32)
    same(f, tf_f, 0.0, "to float")
    same(T.convert_image_dtype(f * 1.3, "uint8", saturate=True),
         tf.image.convert_image_dtype(tf_f * 1.3, tf.uint8, saturate=True), 0.0, "to uint8")
    same(T.convert_image_dtype(img, "uint16"), tf.image.convert_image_dtype(timg, tf.uint16), 0.0, "to uint16")
    for size in ([17, 23], [60, 41]):
        same(T.resize(img, size), tf.image.resize(timg, size), 2e-3, f"bilinear {size}")
        same(T.resize(img, size, method="nearest"), tf.image.resize(timg, size, method="nearest"), 0.0, "nearest")
        same(T.resize(img[None], size, preserve_aspect_ratio=True),
             tf.image.resize(timg[None], size, preserve_aspect_ratio=True), 2e-3, "aspect")
    same(T.flip_left_right(img), tf.image.flip_left_right(timg))
    same(T.flip_up_down(img[None]), tf.image.flip_up_down(timg[None]))
    same(T.rot90(img, 3), tf.image.rot90(timg, 3))
    same(T.crop_to_bounding_box(img, 2, 3, 10, 11), tf.image.crop_to_bounding_box(timg, 2, 3, 10, 11))
    same(T.pad_to_bounding_box(img, 2, 3, 50, 40), tf.image.pad_to_bounding_box(timg, 2, 3, 50, 40))
    same(T.resize_with_crop_or_pad(img, 15, 70), tf.image.resize_with_crop_or_pad(timg, 15, 70))
    same(T.central_crop(img, 0.5), tf.image.central_crop(timg, 0.5))
    gray = T.rgb_to_grayscale(img)
    same(gray, tf.image.rgb_to_grayscale(timg))
    same(T.grayscale_to_rgb(gray), tf.image.grayscale_to_rgb(tf.constant(np.asarray(gray))))
    same(T.adjust_brightness(img, 0.2), tf.image.adjust_brightness(timg, 0.2))
    same(T.adjust_brightness(f, -0.1), tf.image.adjust_brightness(tf_f, -0.1), 1e-6)
    same(T.adjust_contrast(img, 1.7), tf.image.adjust_contrast(timg, 1.7), 1.0)
    same(T.adjust_contrast(f, 0.5), tf.image.adjust_contrast(tf_f, 0.5), 1e-6)
    same(T.per_image_standardization(img), tf.image.per_image_standardization(timg), 1e-5)
    assert np.asarray(T.random_crop(img, [10, 9, 3], seed=1)).shape == (10, 9, 3)
    flipped = np.asarray(T.random_flip_left_right(np.stack([img] * 16), seed=2))
    kinds = {bool(np.array_equal(x, img)) for x in flipped}
    assert kinds == {True, False} and all(np.array_equal(x, img) or np.array_equal(x, img[:, ::-1]) for x in flipped)


def test_the_image_loading_tutorial_trains_under_the_runner(files, tmp_path):
    root = tmp_path / "flowers"
    for k, cls in enumerate(("daisy", "rose")):
        (root / cls).mkdir(parents=True)
        for i in range(4):
            src = files["jpg"] if (i + k) % 2 else files["png"]
            (root / cls / f"{i}{src.suffix}").write_bytes(src.read_bytes())
    script = tmp_path / "tutorial.py"
    script.write_text(textwrap.dedent(f"""
        import os, pathlib
        import numpy as np
        import tensorflow as tf
        data_dir = pathlib.Path({str(root)!r})
        class_names = np.array(sorted(item.name for item in data_dir.glob("*") if item.is_dir()))
        list_ds = tf.data.Dataset.list_files(str(data_dir / "*/*"), shuffle=False)
        list_ds = list_ds.shuffle(8, reshuffle_each_iteration=False)

        def process_path(file_path):
            label = tf.argmax(tf.strings.split(file_path, os.path.sep)[-2] == class_names)
            img = tf.io.decode_jpeg(tf.io.read_file(file_path), channels=3) if False else tf.io.decode_image(
                tf.io.read_file(file_path), channels=3, expand_animations=False)
            return tf.image.resize(img, [16, 16]), label

        ds = list_ds.map(process_path, num_parallel_calls=tf.data.AUTOTUNE).cache().batch(4)
        labels = np.concatenate([y.numpy() for _, y in ds])
        print("labels", sorted(labels.tolist()))
        model = tf.keras.Sequential([tf.keras.layers.Rescaling(1. / 255), tf.keras.layers.Flatten(),
                                     tf.keras.layers.Dense(2)])
        model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(ds, epochs=1, verbose=0)
        print("trained")
    """))
    root_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = dict(os.environ, PYTHONPATH=root_dir + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "flexflow_keras", str(script)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "labels [0, 0, 0, 0, 1, 1, 1, 1]" in proc.stdout and "trained" in proc.stdout


def test_batched_maps_and_str_arrays_compare_text_as_tensorflow():
    from flexflow_keras.data.dataset import as_tensor

    np.testing.assert_array_equal(as_tensor(np.array(["cat", "dog"])) == "cat", [True, False])
    np.testing.assert_array_equal(as_tensor(np.array(["cat", "dog"], dtype=object)) != "dog", [True, False])
    ds = SliceDataset.from_tensor_slices({"thal": ["fixed", "normal"]}).batch(2).map(lambda d: d["thal"] == "fixed")
    np.testing.assert_array_equal(next(iter(ds)), [True, False])


def test_nearest_resize_copies_values_exactly_and_resize_method_names_work():
    from flexflow_keras.tf_compat import CONSTANTS

    a = np.array([[16777217, 3], [5, 7]], np.int32)[:, :, None]
    out = np.asarray(T.resize(a, [3, 5], method=CONSTANTS["tf.image.ResizeMethod"].NEAREST_NEIGHBOR))
    assert out.dtype == np.int32 and out[0, 0, 0] == 16777217 and set(out.reshape(-1)) == {16777217, 3, 5, 7}


@pytest.mark.tf
def test_colour_and_padding_ops_match_tensorflow(files):
    tf = pytest.importorskip("tensorflow")
    img = np.asarray(IO.decode_png(IO.read_file(str(files["png"]))))
    timg = tf.constant(img)
    f = np.asarray(T.convert_image_dtype(img, "float32"))
    tf_f = tf.image.convert_image_dtype(timg, tf.float32)

    def close(ours, theirs, atol):
        ours, theirs = np.asarray(ours), np.asarray(theirs)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), atol=atol)

    close(T.rgb_to_hsv(f), tf.image.rgb_to_hsv(tf_f), 1e-5)
    close(T.hsv_to_rgb(T.rgb_to_hsv(f)), tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(tf_f)), 1e-5)
    close(T.adjust_saturation(f, 0.4), tf.image.adjust_saturation(tf_f, 0.4), 1e-4)
    close(T.adjust_hue(f, 0.2), tf.image.adjust_hue(tf_f, 0.2), 1e-4)
    close(T.adjust_saturation(img, 1.5), tf.image.adjust_saturation(timg, 1.5), 1.0)
    close(T.adjust_gamma(img, 0.7, 1.1), tf.image.adjust_gamma(timg, 0.7, 1.1), 1.0)
    close(T.adjust_gamma(f, 2.0), tf.image.adjust_gamma(tf_f, 2.0), 1e-6)
    for th, tw in ((50, 50), (20, 60), (64, 16)):
        close(T.resize_with_pad(img, th, tw), tf.image.resize_with_pad(timg, th, tw), 2e-3)
    close(T.total_variation(f), tf.image.total_variation(tf_f), 1e-2)
    close(T.total_variation(f[None].repeat(2, 0)), tf.image.total_variation(tf.stack([tf_f, tf_f])), 1e-2)
    a = np.asarray(T.stateless_random_flip_left_right(np.stack([img] * 8), seed=(1, 2)))
    b = np.asarray(T.stateless_random_flip_left_right(np.stack([img] * 8), seed=(1, 2)))
    np.testing.assert_array_equal(a, b)  # the same seed, the same draws


def test_total_variation_is_differentiated_on_a_variable():
    from flexflow_keras.ops.tape import GradientTape
    from flexflow_keras.variables import tf_variable

    v = tf_variable(np.array([[[0.0], [1.0]], [[3.0], [3.0]]], "float32"))
    with GradientTape() as tape:
        loss = T.total_variation(v)
    np.testing.assert_allclose(float(np.asarray(loss)), 1 + 0 + 3 + 2)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v))[..., 0], [[-2, 0], [1, 1]])


@pytest.mark.tf
def test_sobel_edges_and_jpeg_quality(files):
    tf = pytest.importorskip("tensorflow")
    img = np.asarray(IO.decode_png(IO.read_file(str(files["png"]))))
    f = np.asarray(T.convert_image_dtype(img, "float32"))[None]
    np.testing.assert_allclose(np.asarray(T.sobel_edges(f)), tf.image.sobel_edges(tf.constant(f)).numpy(), atol=1e-5)
    out = np.asarray(T.adjust_jpeg_quality(img, 50))
    theirs = tf.image.adjust_jpeg_quality(tf.constant(img), 50).numpy()
    ours_err, their_err = np.abs(out.astype(int) - img).mean(), np.abs(theirs.astype(int) - img).mean()
    assert out.dtype == np.uint8 and out.shape == img.shape and 0.5 * their_err < ours_err < 2 * their_err
    assert np.asarray(T.random_jpeg_quality(f[0], 40, 90, seed=1)).dtype == np.float32
