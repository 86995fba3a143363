"""`get_file`: find a file in the Keras cache (`~/.keras/<cache_subdir>/`), and the cache's folders in Keras'
order. Nothing is downloaded."""

from __future__ import annotations

import os


def get_file(fname: str | None = None, origin: str | None = None, cache_subdir: str = "datasets",
             cache_dir: str | None = None, **_ignored) -> str:
    """The local path of `fname` in the Keras cache, as `keras.utils.get_file` returns.

    This framework never downloads: when the file is not already in the cache the error names the
    path to put it at and the origin it would have come from.

    Args:
        fname: file name (the last part of `origin` when None).
        origin: the URL Keras would download from (used for the name and the message only).
        cache_subdir: folder under the cache directory.
        cache_dir: the cache directory; ``$KERAS_HOME`` or ``~/.keras`` when None.
    """
    if fname is None:
        if not origin:
            raise ValueError("get_file needs fname= or origin=, received neither.")
        fname = os.path.basename(origin.split("?")[0])
    if cache_dir is None:
        cache_dir = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    path = fname if os.path.isabs(fname) else os.path.join(cache_dir, cache_subdir, fname)
    if os.path.exists(path):
        return path
    for suffix in (".tar.gz", ".zip", ".tgz"):
        if os.path.exists(path + suffix):
            return path + suffix
    raise FileNotFoundError(f"get_file: {path} does not exist and flexflow_keras does not download files"
                            f"{f' (origin: {origin})' if origin else ''}. Copy the file there, or pass "
                            "its location with cache_dir=.")


def keras_cache_dirs(subdir: str) -> list[str]:
    """The Keras cache folders for `subdir` ("datasets", "models"), in Keras' order: $KERAS_HOME, ~/.keras,
    /tmp/.keras."""
    dirs = []
    if os.environ.get("KERAS_HOME"):
        dirs.append(os.path.join(os.environ["KERAS_HOME"], subdir))
    dirs.append(os.path.join(os.path.expanduser("~"), ".keras", subdir))
    dirs.append(os.path.join("/tmp", ".keras", subdir))
    return dirs
