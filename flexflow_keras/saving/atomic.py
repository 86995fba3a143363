"""Crash-safe file replacement: every save writes a temporary file beside its target and renames it.

`atomic_write(path)` yields a temporary path in the target's directory (same file system, so the rename
is atomic); when the block ends normally the file is flushed to disk (`fsync`), renamed over the target
with `os.replace`, and the directory entry is synced. If the block raises, or the process is killed at
any moment, the target is untouched: a reader sees the previous complete file or the new complete file,
never a partial one. Leftover temporaries of killed writers (``.<name>.tmp-<pid>-<n>``) are removed by
the next successful save of the same target.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
from collections.abc import Iterator

_counter = itertools.count()


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(dirname: str) -> None:
    try:
        fd = os.open(dirname or ".", os.O_RDONLY)
    except OSError:  # some platforms cannot open directories; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temp_prefix(path: str) -> str:
    """The name prefix of `path`'s temporaries (hidden, in the same directory)."""
    dirname, base = os.path.split(os.path.abspath(path))
    return os.path.join(dirname, f".{base}.tmp-")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[str]:
    """Yield a temporary path to write; on success it replaces `path` atomically.

    Args:
        path: the final file path; its directory must exist.

    Example:
        >>> with atomic_write("model.keras") as tmp:
        ...     write_everything(tmp)
    """
    final = os.path.abspath(os.fspath(path))
    dirname = os.path.dirname(final)
    if not os.path.isdir(dirname):
        raise FileNotFoundError(f"Cannot save {os.fspath(path)}: the directory {dirname} does not exist. Create "
                                f"it first (os.makedirs({dirname!r}, exist_ok=True)).")
    prefix = temp_prefix(final)
    tmp = f"{prefix}{os.getpid()}-{next(_counter)}"
    try:
        yield tmp
        _fsync_path(tmp)
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    _fsync_dir(dirname)
    for stale in glob.glob(glob.escape(prefix) + "*"):  # left by writers killed mid-save
        pid = stale[len(prefix):].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                os.remove(stale)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another save of this process may be writing it now
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
