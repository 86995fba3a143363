"""MNIST IDX files for ``-d``, plain or gzipped: a directory holding ``train-images-idx3-ubyte[.gz]`` and
``train-labels-idx1-ubyte[.gz]`` (and optionally the ``t10k-*`` pair; the ``train-images.idx3-ubyte``
spelling of some mirrors too), or one file of a pair, whose partner is found beside it.

An IDX file is two zero bytes, a type code, the number of dimensions, one big-endian int32 per
dimension, then the values (big-endian). Fashion-MNIST and KMNIST use the same files.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib

import numpy as np

from flexflow_keras.data.formats.base import DatasetFile, read_fix
from flexflow_keras.errors import DataError

NAME = re.compile(r"^(train|t10k)-(images|labels)[-.]idx(\d)-ubyte(\.gz)?$")
_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def idx_files(directory: str) -> dict[tuple[str, str], str]:
    """{(split, kind): file name} of the IDX files in `directory` (split "train"/"t10k", kind
    "images"/"labels"); a plain file wins over its .gz."""
    found: dict[tuple[str, str], str] = {}
    try:
        names = sorted(os.listdir(directory), key=lambda n: n.endswith(".gz"))
    except OSError:
        return found
    for name in names:
        m = NAME.match(name)
        if m and (m.group(1), m.group(2)) not in found:
            found[(m.group(1), m.group(2))] = name
    return found


def read_idx(path: str) -> np.ndarray:
    """The array in one IDX file (plain or .gz); DataError naming the file when it is corrupt."""
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise DataError(f"-d/--dataset: cannot read the IDX file {path}: {e}. " + read_fix(
            path, e, "The file is damaged or truncated; copy it again.")) from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _TYPES:
        raise DataError(f"-d/--dataset: {path} is not an IDX file (it does not start with the IDX magic "
                        f"00 00 <type> <ndim>). Use the original MNIST files.")
    ndim = raw[3]
    header = 4 + 4 * ndim
    dims = tuple(int(d) for d in np.frombuffer(raw[4:header], ">i4")) if len(raw) >= header else None
    dtype = np.dtype(_TYPES[raw[2]])
    want = header + int(np.prod(dims or (0,))) * dtype.itemsize if dims is not None else None
    if dims is None or len(raw) != want:
        raise DataError(f"-d/--dataset: the IDX file {path} is truncated or padded: its header announces shape "
                        f"{dims} ({want} bytes) but it holds {len(raw)} bytes. Copy the file again.")
    # A copy in native byte order: writable, as Keras' arrays are (frombuffer views of bytes are not).
    return np.frombuffer(raw, dtype, offset=header).reshape(dims).astype(dtype.newbyteorder("="))


def _pair(directory: str, files: dict, split: str, origin: str):
    images = read_idx(os.path.join(directory, files[(split, "images")]))
    labels = read_idx(os.path.join(directory, files[(split, "labels")]))
    if len(images) != len(labels):
        raise DataError(f"-d/--dataset {origin}: {files[(split, 'images')]} has {len(images)} images but "
                        f"{files[(split, 'labels')]} has {len(labels)} labels. Use files of the same split.")
    return images, labels


def read_idx_dir(directory: str, origin: str | None = None) -> DatasetFile:
    """A directory of IDX files (see the module docstring)."""
    origin = origin or directory
    files = idx_files(directory)
    if ("train", "images") not in files or ("train", "labels") not in files:
        have = ", ".join(sorted(files.values())) or "none"
        missing = [f"train-{k}-idx{n}-ubyte[.gz]" for k, n in (("images", 3), ("labels", 1)) if ("train", k) not in files]
        raise DataError(f"-d/--dataset {origin}: MNIST IDX files are incomplete: found {have}, missing "
                        f"{', '.join(missing)}. Put the train images and labels files in {directory}.")
    x, y = _pair(directory, files, "train", origin)
    xt = yt = None
    if ("t10k", "images") in files and ("t10k", "labels") in files:
        xt, yt = _pair(directory, files, "t10k", origin)
    return DatasetFile(origin, "MNIST IDX files", [x], [y], None if xt is None else [xt], None if yt is None else [yt])


def read_idx_file(path: str) -> DatasetFile:
    """-d names one IDX file: read it with its images/labels partner from the same directory."""
    directory, name = os.path.split(os.path.abspath(path))
    m = NAME.match(name)
    if m is None:
        raise DataError(f"-d/--dataset {path}: an IDX file of unknown role; name it like MNIST's "
                        f"train-images-idx3-ubyte / train-labels-idx1-ubyte, or point -d at their directory.")
    files = idx_files(directory)
    split = m.group(1)
    other = "labels" if m.group(2) == "images" else "images"
    if (split, other) not in files:
        want = f"{split}-{other}-idx{1 if other == 'labels' else 3}-ubyte[.gz]"
        raise DataError(f"-d/--dataset {path}: the IDX file {name} needs its partner {want} in {directory}, "
                        f"which is missing. Copy it beside {name}.")
    files[(split, m.group(2))] = name
    x, y = _pair(directory, files, split, path)
    return DatasetFile(path, "MNIST IDX files", [x], [y])
