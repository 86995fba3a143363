"""-d paths that exist but cannot be read: a FIFO (reading it blocked forever), a file or folder this user
may not read, and a permission error inside a reader (whose advice was to rewrite or copy the file again)."""

import gzip
import os
import re

import numpy as np
import pytest

from flexflow_keras.data.formats import idx, table
from flexflow_keras.data.formats.detect import check_exists
from flexflow_keras.errors import DataError


def _denied(*args, **kwargs):
    raise PermissionError(13, "Permission denied", str(args[0]))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_before_it_is_opened(tmp_path):
    fifo = tmp_path / "data.npz"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match=r"data.npz: exists but is neither a file nor a folder \(a FIFO"):
        check_exists(str(fifo))


@pytest.mark.parametrize("folder", [False, True])
def test_a_path_this_user_may_not_read_says_so(tmp_path, monkeypatch, folder):
    path = tmp_path / "d"
    if folder:
        path.mkdir()
    else:
        np.savez(path.with_suffix(".npz"), x=np.zeros(2), y=np.zeros(2))
        path = path.with_suffix(".npz")
    monkeypatch.setattr(os, "access", lambda p, mode: os.fspath(p) != str(path))
    mode = re.escape("a+rx" if folder else "a+r")
    with pytest.raises(DataError, match=rf"may not read the {'folder' if folder else 'file'} \(permission denied\)"
                                        rf"\. Make it readable \(chmod {mode} "):
        check_exists(str(path))


def test_a_permission_error_inside_a_reader_is_not_called_damage(tmp_path, monkeypatch):
    images = tmp_path / "train-images-idx3-ubyte.gz"
    with gzip.open(images, "wb") as f:
        f.write(b"\0\0\x08\x01\0\0\0\x01\0")
    monkeypatch.setattr(idx.gzip, "open", _denied)
    with pytest.raises(DataError) as e:
        idx.read_idx(str(images))
    assert "chmod a+r" in str(e.value) and "damaged" not in str(e.value)
    csv = tmp_path / "d.csv"
    csv.write_text("a,label\n1,0\n")
    monkeypatch.setattr(table, "open", _denied, raising=False)
    with pytest.raises(DataError) as e:
        table._rows(str(csv))
    assert "chmod a+r" in str(e.value) and "UTF-8" not in str(e.value)
