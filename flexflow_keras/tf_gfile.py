"""`tf.io.gfile` under `python -m flexflow_keras` (tf_compat.py's `mapped_call` looks in `CALLS`): TensorFlow's
file-system calls on local paths, which data-loading scripts make before any tensor exists (TensorFlow's audio
tutorial lists its command folders with ``tf.io.gfile.listdir`` and its clips with ``tf.io.gfile.glob``).

They run Python's `os`, `glob` and `shutil` on local paths, with TensorFlow's answers: `listdir` gives the
entry names (directories without a trailing slash), `glob` the matching paths as str (the whole pattern, as
TensorFlow matches it), `exists`/`isdir` booleans, `makedirs` creates parents and accepts an existing
directory, `mkdir` does not, `rename`/`copy` refuse an existing target unless ``overwrite=True``, `walk` is
`os.walk` (top-down by default), and `GFile` / `Open` open a file (text for "r"/"w", bytes with "b").
A missing path is TensorFlow's NotFoundError; remote file systems (``gs://``, ``s3://``, ``hdfs://``) are
refused with how to proceed.
"""

from __future__ import annotations

import glob as _glob
import os
import shutil


def _local(path, who: str) -> str:
    if hasattr(path, "numpy"):  # a string tensor (a Dataset element, tf.constant)
        path = path.numpy()
    path = os.fspath(path)  # str, bytes or a pathlib.Path
    path = path.decode("utf-8") if isinstance(path, bytes) else path
    if "://" in path:
        from flexflow_keras.errors import ArgumentError

        raise ArgumentError(f"tf.io.gfile.{who}({path!r}): flexflow_keras reads local paths only; copy the files "
                            f"to a local folder first (e.g. gsutil cp -r / aws s3 cp) and pass its path.")
    return path


def _not_found(who: str, path: str):
    from flexflow_keras.tf_constants import NotFoundError

    return NotFoundError(f"tf.io.gfile.{who}: {path}; No such file or directory")


def listdir(path) -> list[str]:
    """The names of the entries of directory `path` (no '.' or '..')."""
    path = _local(path, "listdir")
    if not os.path.isdir(path):
        raise _not_found("listdir", path)
    return os.listdir(path)


def glob(pattern) -> list[str]:
    """The paths matching `pattern` (``*``, ``?`` and ``[...]`` in any component), as str."""
    return _glob.glob(_local(pattern, "glob"))


def exists(path) -> bool:
    return os.path.exists(_local(path, "exists"))


def isdir(path) -> bool:
    return os.path.isdir(_local(path, "isdir"))


def makedirs(path) -> None:
    os.makedirs(_local(path, "makedirs"), exist_ok=True)


def mkdir(path) -> None:
    path = _local(path, "mkdir")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise _not_found("mkdir", parent)
    os.mkdir(path)


def remove(path) -> None:
    path = _local(path, "remove")
    if not os.path.exists(path):
        raise _not_found("remove", path)
    os.remove(path)


def rmtree(path) -> None:
    path = _local(path, "rmtree")
    if not os.path.exists(path):
        raise _not_found("rmtree", path)
    shutil.rmtree(path)


def _check_target(who: str, dst: str, overwrite: bool) -> None:
    if os.path.exists(dst) and not overwrite:
        from flexflow_keras.tf_constants import AlreadyExistsError

        raise AlreadyExistsError(f"tf.io.gfile.{who}: file already exists: {dst}; pass overwrite=True.")


def _transfer(who: str, move, src, dst, overwrite: bool) -> None:
    src, dst = _local(src, who), _local(dst, who)
    if not os.path.exists(src):
        raise _not_found(who, src)
    _check_target(who, dst, overwrite)
    move(src, dst)


def rename(src, dst, overwrite=False) -> None:
    _transfer("rename", os.replace, src, dst, overwrite)


def copy(src, dst, overwrite=False) -> None:
    _transfer("copy", shutil.copyfile, src, dst, overwrite)


def walk(top, topdown=True, onerror=None):
    return os.walk(_local(top, "walk"), topdown=topdown, onerror=onerror)


def gfile_open(name, mode="r"):
    """`tf.io.gfile.GFile(name, mode)`: the opened file (text unless the mode has "b")."""
    path = _local(name, "GFile")
    if "r" in mode and not os.path.exists(path):
        raise _not_found("GFile", path)
    return open(path, mode)  # noqa: SIM115 - the caller closes it, as TensorFlow's GFile


_FUNCTIONS = {"listdir": listdir, "glob": glob, "exists": exists, "isdir": isdir, "makedirs": makedirs,
              "mkdir": mkdir, "remove": remove, "rmtree": rmtree, "rename": rename, "copy": copy, "walk": walk,
              "GFile": gfile_open, "Open": gfile_open}
CALLS = {f"tf.{space}gfile.{name}": fn for name, fn in _FUNCTIONS.items() for space in ("io.", "compat.v1.io.")}

__all__ = ["CALLS", "copy", "exists", "gfile_open", "glob", "isdir", "listdir", "makedirs", "mkdir", "remove",
           "rename", "rmtree", "walk"]
