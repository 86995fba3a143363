"""List scheduling of a task graph on resources: the simulator's timeline, compiled with Numba.

Tasks become ready when their predecessors finish (plus the edge's latency: waking another processor's
worker) and the thread that issues launches has issued them (`issue`, a cumulative time); ready tasks start in order of readiness, each as soon as every resource it
holds is free (a processor runs one task at a time; a link carries one transfer at a time), and a task on
a CPU node also takes one of the node's core slots. Returns each task's finish time.
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def schedule(dur, issue, res_ptr, res_idx, pred_ptr, pred_idx, pred_lat, core, n_res, slots_per_node, n_nodes):
    n = dur.size
    indeg = np.zeros(n, np.int64)
    succ_cnt = np.zeros(n + 1, np.int64)
    for t in range(n):
        for k in range(pred_ptr[t], pred_ptr[t + 1]):
            p = pred_idx[k]
            succ_cnt[p + 1] += 1
            indeg[t] += 1
    for t in range(n):
        succ_cnt[t + 1] += succ_cnt[t]
    succ = np.empty(succ_cnt[n], np.int64)
    succ_lat = np.empty(succ_cnt[n], np.float64)
    fill = succ_cnt[:n].copy()
    for t in range(n):
        for k in range(pred_ptr[t], pred_ptr[t + 1]):
            p = pred_idx[k]
            succ[fill[p]] = t
            succ_lat[fill[p]] = pred_lat[k]
            fill[p] += 1
    ready = issue.copy()
    free = np.zeros(n_res, np.float64)
    cores = np.zeros((max(n_nodes, 1), max(slots_per_node, 1)), np.float64)
    finish = np.zeros(n, np.float64)
    heap = [(0.0, 0)]
    heap.pop()
    for t in range(n):
        if indeg[t] == 0:
            heapq.heappush(heap, (ready[t], t))
    while heap:
        rt, t = heapq.heappop(heap)
        start = rt
        for k in range(res_ptr[t], res_ptr[t + 1]):
            f = free[res_idx[k]]
            if f > start:
                start = f
        node = core[t]
        slot = -1
        if node >= 0:
            slot = 0
            best = cores[node, 0]
            for s in range(1, slots_per_node):
                if cores[node, s] < best:
                    best = cores[node, s]
                    slot = s
            if best > start:
                start = best
        end = start + dur[t]
        for k in range(res_ptr[t], res_ptr[t + 1]):
            free[res_idx[k]] = end
        if slot >= 0:
            cores[node, slot] = end
        finish[t] = end
        for k in range(succ_cnt[t], succ_cnt[t + 1]):
            s = succ[k]
            r = end + succ_lat[k]
            if r > ready[s]:
                ready[s] = r
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(heap, (ready[s], s))
    return finish


class TaskList:
    """Tasks in issue order: durations, issue times, resources, core pool, predecessors.

    Two models of the thread that issues launches: a cumulative clock (a compiled runtime, whose issue
    work runs beside the tasks), or, with `gil` set to the interpreter lock's resource, explicit issue
    tasks on the issuer that hold the lock, and tasks whose Python part (`py`) holds the lock before
    their kernel part runs without it (this process's runtime).
    """

    def __init__(self, gil: int = -1, issuer: int = -1, n_devices: int = 0, handoff: float = 0.0):
        self.dur: list[float] = []
        self.pred_lat: list[float] = []
        self.dev: list[int] = []
        self.n_devices, self.handoff = n_devices, handoff
        self.issue: list[float] = []
        self.res_ptr = [0]
        self.res_idx: list[int] = []
        self.pred_ptr = [0]
        self.pred_idx: list[int] = []
        self.core: list[int] = []
        self.clock = 0.0
        self.gil, self.issuer = gil, issuer
        self.last_issue = -1

    def _raw(self, dur: float, res, preds, core: int) -> int:
        dev = res[0] if res and res[0] < self.n_devices else -1
        self.dur.append(dur)
        self.issue.append(self.clock)
        self.res_idx.extend(res)
        self.res_ptr.append(len(self.res_idx))
        self.pred_idx.extend(preds)
        for p in preds:
            d = self.dev[p]
            self.pred_lat.append(self.handoff if dev >= 0 and d >= 0 and d != dev else 0.0)
        self.pred_ptr.append(len(self.pred_idx))
        self.core.append(core)
        self.dev.append(dev)
        return len(self.dur) - 1

    def add(self, dur: float, res, preds, core: int = -1, issue_cost: float = 0.0, py: float = 0.0) -> int:
        """A task (its kernel part `dur`, Python part `py`); returns the id its successors wait for."""
        if self.gil < 0:
            self.clock += issue_cost
            return self._raw(dur + py, res, preds, core)
        preds = list(preds)
        if issue_cost > 0:
            prev = [self.last_issue] if self.last_issue >= 0 else []
            self.last_issue = self._raw(issue_cost, [self.issuer, self.gil], prev, -1)
            preds.append(self.last_issue)
        if py > 0:
            preds = [self._raw(py, list(res) + [self.gil], preds, core)]
        return self._raw(dur, res, preds, core)


def run(tasks, n_res: int, slots_per_node: int, n_nodes: int) -> np.ndarray:
    """Schedule a `TaskList` (see simulator.py); returns the finish time of every task."""
    return schedule(np.asarray(tasks.dur, np.float64), np.asarray(tasks.issue, np.float64),
                    np.asarray(tasks.res_ptr, np.int64), np.asarray(tasks.res_idx, np.int64),
                    np.asarray(tasks.pred_ptr, np.int64), np.asarray(tasks.pred_idx, np.int64),
                    np.asarray(tasks.pred_lat, np.float64),
                    np.asarray(tasks.core, np.int64), n_res, slots_per_node, n_nodes)
