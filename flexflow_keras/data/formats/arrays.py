"""NumPy files for ``-d``: an ``.npz`` with Keras' keys (``x_train/y_train[/x_test/y_test]``), ``x/y``, or
numbered keys (``x_train_0, x_train_1, ...``) for several inputs; and ``.npy`` pairs (``x.npy + y.npy``,
or ``x_train.npy + y_train.npy [+ x_test.npy + y_test.npy]``). Object (pickled) arrays are refused.
"""

from __future__ import annotations

import os
import zipfile

import numpy as np

from flexflow_keras.data.formats.base import DatasetFile, read_fix, unusable
from flexflow_keras.data.sources import _npz_group as _group
from flexflow_keras.errors import DataError

NPY_PAIRS = (("x_train.npy", "y_train.npy"), ("x.npy", "y.npy"))
NPY_TEST = ("x_test.npy", "y_test.npy")


def npz_members(path: str) -> list[str]:
    """The array names in an .npz (DataError when it is not a zip file)."""
    try:
        with zipfile.ZipFile(path) as z:
            return [n.removesuffix(".npy") for n in z.namelist()]
    except (OSError, zipfile.BadZipFile) as e:
        raise DataError(f"-d/--dataset {path}: cannot read it as an .npz (a zip of .npy arrays): {e}. " + read_fix(
            path, e, "Write it with np.savez(path, x_train=..., y_train=...).")) from None


def npz_layout(keys: set[str]) -> tuple[list[str], list[str], list[str] | None, list[str] | None] | None:
    """(x_train keys, y_train keys, x_test keys, y_test keys) of an .npz, or None when it has neither
    Keras' keys nor x/y."""
    xk, yk = _group(keys, "x_train"), _group(keys, "y_train")
    if xk is None or yk is None:
        xk, yk = _group(keys, "x"), _group(keys, "y")
    if xk is None or yk is None:
        return None
    xt, yt = _group(keys, "x_test"), _group(keys, "y_test")
    if xt is None or yt is None:
        xt = yt = None
    return xk, yk, xt, yt


def _refuse_objects(path: str, e: ValueError) -> DataError:
    if "Object arrays" in str(e) or "allow_pickle" in str(e):
        return DataError(f"-d/--dataset {path} holds object (ragged or pickled) arrays, which are not loaded for "
                         f"safety. Pad sequences to one length (keras.utils.pad_sequences) and save plain "
                         f"arrays with np.savez.")
    return DataError(f"-d/--dataset {path}: cannot read the arrays: {e}.")


def read_npz(path: str) -> DatasetFile:
    """An .npz as a DatasetFile (see the module docstring for the keys)."""
    keys = npz_members(path)
    layout = npz_layout(set(keys))
    if layout is None:
        shown = ", ".join(sorted(keys)) if keys else "none"
        raise unusable(path, f"an .npz with keys {shown}",
                       "Save it with np.savez(path, x_train=..., y_train=..., x_test=..., y_test=...) "
                       "(or x=..., y=...).")
    xk, yk, xt, yt = layout
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in xk + yk + (xt or []) + (yt or [])}
    except ValueError as e:
        raise _refuse_objects(path, e) from None
    except (OSError, zipfile.BadZipFile, EOFError) as e:
        raise DataError(f"-d/--dataset {path}: cannot read the .npz: {e}. "
                        + read_fix(path, e, "Rewrite it with np.savez.")) from None
    test = (xt is not None)
    return DatasetFile(path, "npz " + "/".join(["x_train", "y_train"] if xk[0].startswith("x_train") else ["x", "y"])
                       + ("/x_test/y_test" if test else ""),
                       [arrays[k] for k in xk], [arrays[k] for k in yk],
                       [arrays[k] for k in xt] if test else None, [arrays[k] for k in yt] if test else None)


def _load_npy(path: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False, mmap_mode=None)
    except ValueError as e:
        raise _refuse_objects(path, e) from None
    except (OSError, EOFError) as e:
        raise DataError(f"-d/--dataset {path}: cannot read the .npy file: {e}. "
                        + read_fix(path, e, "Rewrite it with np.save.")) from None


def npy_pair_in(directory: str) -> tuple[str, str] | None:
    """The (x, y) .npy names present in `directory`, or None."""
    for xn, yn in NPY_PAIRS:
        if os.path.isfile(os.path.join(directory, xn)) and os.path.isfile(os.path.join(directory, yn)):
            return xn, yn
    return None


def read_npy_dir(directory: str, origin: str | None = None) -> DatasetFile:
    """A directory with x.npy + y.npy, or x_train.npy + y_train.npy [+ x_test.npy + y_test.npy]."""
    pair = npy_pair_in(directory)
    if pair is None:
        raise unusable(origin or directory, "no x.npy + y.npy or x_train.npy + y_train.npy pair")
    x = _load_npy(os.path.join(directory, pair[0]))
    y = _load_npy(os.path.join(directory, pair[1]))
    xt = yt = None
    if pair[0] == "x_train.npy" and all(os.path.isfile(os.path.join(directory, n)) for n in NPY_TEST):
        xt, yt = (_load_npy(os.path.join(directory, n)) for n in NPY_TEST)
    name = f".npy pair {pair[0]} + {pair[1]}" + (" + x_test/y_test" if xt is not None else "")
    return DatasetFile(origin or directory, name, [x], [y], None if xt is None else [xt], None if yt is None else [yt])


def partner_of(name: str) -> str | None:
    """The other file of an .npy pair ("x.npy" -> "y.npy", "y_test.npy" -> "x_test.npy"), or None."""
    stem = name.removesuffix(".npy")
    for a, b in (("x", "y"), ("y", "x")):
        for suffix in ("", "_train", "_test"):
            if stem == a + suffix:
                return b + suffix + ".npy"
    return None


def read_npy_file(path: str) -> DatasetFile:
    """-d names one .npy: read it with its partner from the same directory."""
    directory, name = os.path.split(os.path.abspath(path))
    partner = partner_of(name)
    if partner is None:
        raise unusable(path, f"a single .npy file named {name}",
                       "Name the arrays x.npy and y.npy (or x_train.npy and y_train.npy) side by side and point "
                       "-d at either file or at their directory.")
    if not os.path.isfile(os.path.join(directory, partner)):
        raise DataError(f"-d/--dataset {path}: the .npy file {name} needs its partner {partner} in {directory}, "
                        f"which is missing. Save the labels with np.save({os.path.join(directory, partner)!r}, "
                        f"y) (or the inputs, for a y file).")
    if name.startswith(("x_test", "y_test")):
        xn, yn = ("x_test.npy", "y_test.npy")
        x, y = _load_npy(os.path.join(directory, xn)), _load_npy(os.path.join(directory, yn))
        return DatasetFile(path, f".npy pair {xn} + {yn}", [x], [y])
    if name.startswith(("x_train", "y_train")):
        return read_npy_dir(directory, origin=path)
    x, y = _load_npy(os.path.join(directory, "x.npy")), _load_npy(os.path.join(directory, "y.npy"))
    return DatasetFile(path, ".npy pair x.npy + y.npy", [x], [y])
