"""Image folders: decoding, resizing, channels, Keras' label order, bad files; the -d detector's API."""

import numpy as np
import pytest
from PIL import Image

from flexflow_keras.data.dataset import image_dataset_from_directory
from flexflow_keras.data.images import (
    ImageFolderSource,
    index_image_folder,
    is_image_folder,
    open_image_folder,
)
from flexflow_keras.errors import DataError


def _save(path, array, mode=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array, mode).save(path)


@pytest.fixture
def folder(tmp_path):
    """3 classes (out of alphabetical creation order), RGB PNGs of 6x4 with known pixels."""
    rng = np.random.default_rng(0)
    pixels = {}
    for cls in ("zebra", "ant", "mouse"):
        for i in range(3):
            a = rng.integers(0, 256, (4, 6, 3), dtype=np.uint8)
            p = tmp_path / "data" / cls / f"img{i}.png"
            _save(p, a)
            pixels[str(p)] = a
    (tmp_path / "data" / "ant" / "notes.txt").write_text("not an image")
    (tmp_path / "data" / ".hidden").mkdir()
    return tmp_path / "data", pixels


def test_classes_are_sorted_subfolders_and_labels_follow(folder):
    root, _ = folder
    paths, labels, names = index_image_folder(root)
    assert names == ["ant", "mouse", "zebra"]
    assert len(paths) == 9 and all(p.endswith(".png") for p in paths)  # notes.txt is not an image
    assert labels.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [p.split("/")[-2] for p in paths] == ["ant"] * 3 + ["mouse"] * 3 + ["zebra"] * 3


def test_decode_at_native_size_is_exact_and_float32(folder):
    root, pixels = folder
    paths, labels, names = index_image_folder(root)
    src = ImageFolderSource(paths, labels, names, image_size=(4, 6), channels=3)
    x = src.load()
    assert x.dtype == np.float32 and x.shape == (9, 4, 6, 3)
    for k, p in enumerate(paths):
        np.testing.assert_array_equal(x[k], pixels[p].astype(np.float32))


def _tf_bilinear(a, h, w):
    """tf.image.resize's bilinear (half-pixel centres, edges clamped, no antialiasing) in float64 NumPy."""
    a = a.astype(np.float64)
    big_h, big_w = a.shape[:2]

    def taps(n_out, n_in):
        c = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
        lo = np.clip(np.floor(c), 0, n_in - 1).astype(int)
        return lo, np.clip(np.ceil(c), 0, n_in - 1).astype(int), c - np.floor(c)

    y0, y1, wy = taps(h, big_h)
    x0, x1, wx = taps(w, big_w)
    wx = wx[None, :, None] if a.ndim == 3 else wx[None, :]
    wy = wy[:, None, None] if a.ndim == 3 else wy[:, None]
    top = a[y0][:, x0] + (a[y0][:, x1] - a[y0][:, x0]) * wx
    bottom = a[y1][:, x0] + (a[y1][:, x1] - a[y1][:, x0]) * wx
    return top + (bottom - top) * wy


def test_resize_is_tf_bilinear_and_grayscale_is_L(folder):
    # Keras' loader resizes with tf.image.resize (no antialiasing), not with Pillow's antialiased bilinear
    root, pixels = folder
    paths, labels, names = index_image_folder(root)
    src = ImageFolderSource(paths, labels, names, image_size=(8, 3), channels=1)
    out = np.empty((2, 8, 3, 1), np.float32)
    src.read_x([4, 0], out)
    grey = np.asarray(Image.fromarray(pixels[paths[4]]).convert("L"))
    np.testing.assert_allclose(out[0, :, :, 0], _tf_bilinear(grey, 8, 3), rtol=1e-6, atol=1e-4)
    near = ImageFolderSource(paths, labels, names, image_size=(8, 3), channels=1, interpolation="nearest").load([4])
    rows = np.minimum(np.floor((np.arange(8) + 0.5) * grey.shape[0] / 8), grey.shape[0] - 1).astype(int)
    cols = np.minimum(np.floor((np.arange(3) + 0.5) * grey.shape[1] / 3), grey.shape[1] - 1).astype(int)
    np.testing.assert_array_equal(near[0, :, :, 0], grey[rows][:, cols])
    rgba = ImageFolderSource(paths, labels, names, image_size=(4, 6), channels=4).load([0])
    assert rgba.shape == (1, 4, 6, 4) and np.all(rgba[..., 3] == 255)


def test_crop_to_aspect_ratio_takes_the_centre(tmp_path):
    a = np.zeros((4, 8, 3), np.uint8)
    a[:, 2:6] = 200  # the centre 4x4 square is bright, the sides dark
    _save(tmp_path / "d" / "c" / "x.png", a)
    paths, labels, names = index_image_folder(tmp_path / "d")
    x = ImageFolderSource(paths, labels, names, (4, 4), 3, crop_to_aspect_ratio=True).load()
    assert np.all(x == 200)
    squeezed = ImageFolderSource(paths, labels, names, (4, 4), 3).load()
    assert squeezed.min() < 200  # without the crop the dark sides are squeezed in


def test_unreadable_image_names_the_file(folder):
    root, _ = folder
    bad = root / "mouse" / "broken.jpg"
    bad.write_bytes(b"\xff\xd8 this is not a jpeg")
    paths, labels, names = index_image_folder(root)
    src = ImageFolderSource(paths, labels, names, (4, 6), 3)
    k = paths.index(str(bad))
    with pytest.raises(DataError, match=r"broken\.jpg.*class 'mouse'.*Remove or replace"):
        src.load([k])


def test_class_folders_without_images_are_a_data_error(tmp_path):
    (tmp_path / "d" / "cats").mkdir(parents=True)
    (tmp_path / "d" / "dogs").mkdir()
    (tmp_path / "d" / "dogs" / "readme.md").write_text("x")
    assert not is_image_folder(tmp_path / "d")
    with pytest.raises(DataError, match=r"holds no image files.*cats.*dogs"):
        open_image_folder(tmp_path / "d", [(None, 8, 8, 3)])


def test_is_image_folder(folder, tmp_path):
    root, _ = folder
    assert is_image_folder(root)
    assert not is_image_folder(root / "ant" / "img0.png")  # a file
    assert not is_image_folder(tmp_path / "missing")
    flat = tmp_path / "flat"
    _save(flat / "a.png", np.zeros((2, 2, 3), np.uint8))
    assert not is_image_folder(flat)  # images but no class sub-folders


def test_open_image_folder_shapes_for_the_model_input(folder, caplog):
    root, _ = folder
    with caplog.at_level("INFO", logger="flexflow_keras"):
        src = open_image_folder(root, [(None, 5, 7, 1)])
    assert src.sample_shape == (5, 7, 1) and src.num_samples == 9
    text = caplog.text
    assert str(root) in text and "9 samples" in text and "3 classes" in text and "png" in text
    assert open_image_folder(root, [(None, 5, 7)]).sample_shape == (5, 7, 1)  # (H, W): grayscale
    with pytest.raises(DataError, match=r"image folder.*\(784,\).*height, width, channels"):
        open_image_folder(root, [(None, 784)])
    with pytest.raises(DataError, match="2 inputs"):
        open_image_folder(root, [(None, 5, 7, 1), (None, 3)])


def test_image_dataset_batches_labels_and_methods(folder):
    root, _ = folder
    ds = image_dataset_from_directory(root, image_size=(4, 6), batch_size=4, shuffle=False,
                                      label_mode="categorical", verbose=False)
    assert ds.class_names == ["ant", "mouse", "zebra"] and len(ds) == 3
    batches = list(ds)
    assert [b[0].shape[0] for b in batches] == [4, 4, 1]
    x, y = batches[0]
    assert x.numpy().dtype == np.float32 and y.numpy().shape == (4, 3)
    ids = next(iter(image_dataset_from_directory(root, image_size=(4, 6), shuffle=False, verbose=False)))[1]
    assert ids[4].numpy() == 1 and ds.class_names[ids[4]] == "mouse" and int(ids[0]) == 0  # as scripts use them
    np.testing.assert_array_equal(np.argmax(np.concatenate([b[1] for b in batches]), -1),
                                  [0, 0, 0, 1, 1, 1, 2, 2, 2])
    assert len(ds.take(2)) == 2 and len(ds.skip(1)) == 2 and ds.prefetch(8) is ds and ds.cache() is ds
    scaled = next(iter(ds.map(lambda a, b: (a / 255.0, b))))[0]
    np.testing.assert_allclose(scaled, x / 255.0)
    both = image_dataset_from_directory(root, image_size=(4, 6), validation_split=1 / 3, subset="both", seed=3,
                                        verbose=False)
    assert len(both[0].file_paths) == 6 and len(both[1].file_paths) == 3
    assert not set(both[0].file_paths) & set(both[1].file_paths)
    with pytest.raises(ValueError, match="seed"):
        image_dataset_from_directory(root, validation_split=0.2, subset="training")
    with pytest.raises(ValueError, match="exactly 2 classes"):
        image_dataset_from_directory(root, label_mode="binary")
