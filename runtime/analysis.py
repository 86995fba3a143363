"""Logical dependence analysis: which earlier accesses a new access must wait for.

State (one `FieldState` per region field, owned by one Runtime): `users`, the writes and reductions
(node, region-like, privilege) not yet known to be superseded, `readers`, the RO accesses likewise (kept
apart so a reader never scans other readers), and `epoch`, the open reduction epoch (operator, covered
region-like, first reducer, target instance).

Policy: two accesses conflict when they overlap and are not both RO and not both reductions with the
same operator joining one epoch. A new access depends on every conflicting earlier user. A write
(RW, WD, or the first reducer of an epoch, which reduces in place) prunes the users it covers, since
anything later that conflicts with them conflicts with the writer too. Reducers that join an open epoch
fold into one accumulator per (processor, memory): the target itself on the first reducer's processor,
a private buffer elsewhere (its body needs no dependence: it only touches the buffer). Any other
overlapping access closes the epoch: the private buffers are folded into the target (fold nodes after
the last reducer of each accumulator) and the closing access waits on the folds.

Invariant: the order this produces, applied to the nodes in issue order, gives the same contents as
running the tasks one at a time (reductions fold in some order, which only float rounding can see).
Completed users are dropped while scanning, except writers that failed (what depends on their data must
not run) and, while a trace is recorded, any user at all (the recording must see every edge).
"""

from __future__ import annotations

import threading

import numpy as np

from runtime.privileges import READ_ONLY, REDUCE
from runtime.regions import contains, overlaps
from runtime.streams import gpu_pending

NORMAL, IN_PLACE, JOIN = 0, 1, 2


class Accumulator:
    """Where the reducers of one epoch on one (processor, memory) fold: the target itself for the
    first reducer's processor, else a private buffer over the epoch's region, folded at the epoch's
    end. Reducers sharing an accumulator run one after another (`last` is the latest)."""

    __slots__ = ("buf", "last", "private", "fold", "init", "aid", "fast")

    def __init__(self, buf, last, private: bool, fold=None, init=None, aid: int = -1, fast: bool = True):
        self.buf = buf
        self.last = last
        self.private = private
        self.fold = fold
        self.init = init
        self.aid = aid
        self.fast = fast  # folds a host buffer into the home array (a trace may keep both)


class Epoch:
    """An open reduction epoch on one field: reducers with `op` inside `sub` fold into `target`."""

    __slots__ = ("op", "sub", "priv", "first", "target", "lock", "accs", "target_key")

    def __init__(self, op: str, sub, priv, first):
        self.op = op
        self.sub = sub
        self.priv = priv
        self.first = first
        self.target = None   # None: the home array (fast path); else an Instance
        self.lock = threading.Lock()
        self.accs: dict = {}  # (processor uid, memory uid) -> Accumulator
        self.target_key = None


class FieldState:
    """Everything one Runtime knows about one field of one region."""

    __slots__ = ("region", "field", "dtype", "users", "readers", "rlimit", "epoch", "home", "views", "multi", "instances", "label",
                 "last_proc")

    def __init__(self, region, field: str | None):
        self.region = region
        self.field = field
        self.dtype = np.dtype(region.field_dtypes[field])
        self.users: list = []    # (node, region-like, privilege) of writers and reducers
        self.readers: list = []  # (node, region-like) of RO accesses since the writers that cover them
        self.rlimit = 32         # compact `readers` when it grows past this
        self.epoch: Epoch | None = None
        self.home = None        # the SYSTEM-memory array for the whole region (allocated lazily)
        self.views: dict = {}   # region-like -> view of home (the fast path's cache)
        self.multi = False      # True once an instance outside the home array exists
        self.instances: list = []
        self.label = region.name if field is None else f"{region.name}.{field}"
        self.last_proc = None   # processor of the latest writer (the default mapper's owner-computes hint)


def _live(en, keep_done: bool) -> bool:
    # a completed user still matters if it is a failed writer (its dependents must not run) or while a
    # trace records (the record must see every edge)
    return (keep_done or not en.done or (en.gpu_event is not None and gpu_pending(en))
            or (en.error is not None and en.writes))


def register(fs: FieldState, sub, priv, node, preds: list, keep_done: bool, close) -> int:
    """Record that `node` accesses `sub` of `fs` with `priv`; append what it must wait for to `preds`.

    Returns NORMAL, IN_PLACE (first reducer of a new epoch: reduce into the data itself) or JOIN (a
    later reducer of the open epoch `fs.epoch`: the caller binds it to an accumulator). An access that
    ends the open epoch first calls `close(fs, epoch)`, which adds the epoch's folds to `fs.users`.
    """
    code = priv.code
    ep = fs.epoch
    if ep is not None:
        if code == REDUCE and ep.op == priv.redop and contains(ep.sub, sub):
            return JOIN
        if code == REDUCE or overlaps(ep.sub, sub):
            fs.epoch = None
            close(fs, ep)
    if code == READ_ONLY:
        register_read(fs, sub, node, preds, keep_done)
        return NORMAL
    # a writer, or the first reducer of a new epoch (it reduces in place, so it conflicts like a writer)
    readers = fs.readers
    if readers:
        keep_r = []
        for entry in readers:
            en = entry[0]
            if not (keep_done or not en.done or (en.error is not None and en.writes)
                    or (en.gpu_event is not None and gpu_pending(en))):
                continue
            es = entry[1]
            if overlaps(es, sub):
                preds.append(en)
                if contains(sub, es):
                    continue
            keep_r.append(entry)
        fs.readers = keep_r
    keep = []
    for entry in fs.users:
        en = entry[0]
        if not (keep_done or not en.done or (en.error is not None and en.writes)
                or (en.gpu_event is not None and gpu_pending(en))):
            continue
        es = entry[1]
        if overlaps(es, sub):
            preds.append(en)
            if contains(sub, es):
                continue
        keep.append(entry)
    keep.append((node, sub, priv))
    fs.users = keep
    if code == REDUCE:
        fs.epoch = Epoch(priv.redop, sub, priv, node)
        return IN_PLACE
    return NORMAL


def register_read(fs: FieldState, sub, node, preds: list, keep_done: bool) -> None:
    """`register` for an RO access when no epoch is open (the launcher calls it directly then)."""
    # readers conflict only with writers and reducers: scan `users`, never the other readers
    users = fs.users
    stale = False
    for entry in users:
        en = entry[0]
        # _live(en, keep_done), inlined: this loop runs for every region argument
        if not (keep_done or not en.done or (en.error is not None and en.writes)
                or (en.gpu_event is not None and gpu_pending(en))):
            stale = True
        elif overlaps(entry[1], sub):
            preds.append(en)
    if stale:
        fs.users = [e for e in users if _live(e[0], keep_done)]
    readers = fs.readers
    readers.append((node, sub))
    if len(readers) > fs.rlimit and not keep_done:
        # drop completed readers; the limit doubles with what is still pending (amortised O(1))
        readers = fs.readers = [e for e in readers if not e[0].done or e[0] is node
                                or (e[0].gpu_event is not None and gpu_pending(e[0]))]
        fs.rlimit = max(32, 2 * len(readers))


def pending_users(states, out: list) -> None:
    """Append every not-yet-completed user of `states` to `out` (a trace replay's entry barrier)."""
    last = None  # after a replay every touched field's one user is its exit barrier: list it once
    for fs in states:
        for entries in (fs.users, fs.readers):
            for entry in entries:
                en = entry[0]
                if en is not last and (not en.done or (en.gpu_event is not None and gpu_pending(en))
                                       or (en.error is not None and en.writes)):
                    out.append(en)
                    last = en
