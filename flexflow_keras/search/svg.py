"""A strategy drawn as SVG: one box per op, laid out by depth, coloured by how the op is split.

`strategy_svg(graph, strategy)` returns the SVG text; `write_strategy_svg(path, ...)` writes it atomically.
Ops sit in columns by depth (the longest path from a graph input), left to right, in topological order
within a column (nudged towards their producers' rows); an edge joins each producer to its consumer. A
box shows the op name, its config (`[2, 1] on [0..1]`, `x2 partial sums`) and one small chip per device
its pieces run on; hovering shows the op type, output shape and the full device list. Box colours:

- data parallel: only the batch (sample) dims split;
- parameter split: output features / channels split (with or without the batch);
- attribute split: parts of a sample split (height, width, sequence), no parameter dim;
- partial sums: a split contraction (`reduce` > 1), whatever else is split;
- whole on one device: one piece, on device 0;  placement: one piece, on another device;
- not in the strategy: the op runs whatever the execution fills in (data parallel), dashed.

Plain string generation, no dependencies; every name is XML-escaped.
"""

from __future__ import annotations

import colorsys
import os
from collections import Counter

from flexflow_keras.errors import FlexFlowKerasError, StrategyError
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.naming import node_names
from flexflow_keras.ops.strategy import ParallelConfig, Strategy, node_space

# kind -> (legend label, fill colour)
KINDS = {
    "data": ("data parallel (batch only)", "#9ecae1"),
    "parameter": ("parameter split", "#fdae6b"),
    "attribute": ("attribute / spatial split", "#a1d99b"),
    "reduce": ("partial sums", "#e377c2"),
    "whole": ("whole on device 0", "#d9d9d9"),
    "placed": ("placement: whole on another device", "#fdd835"),
    "missing": ("not in the strategy", "#ffffff"),
}

BOX_H, COL_GAP, ROW_GAP, MARGIN = 58, 56, 18, 20
CHAR_W, MAX_CHIPS = 7.0, 16  # monospace width of an 11px character (rounded up); chips drawn before "+n"
LEGEND_W = int(30 + CHAR_W * (6 + max(len(label) for label, _ in KINDS.values())))  # one legend column


def split_kind(node, cfg: ParallelConfig | None) -> str:
    """The colour class of one op under `cfg` (a key of `KINDS`)."""
    if cfg is None:
        return "missing"
    if cfg.reduce > 1:
        return "reduce"
    try:
        kinds = [r.kind for r in node_space(node).dims]
    except FlexFlowKerasError:  # a drawing must not fail on an op whose rules reject its inputs
        kinds = []
    if len(kinds) != len(cfg.degrees):  # unknown rules: the batch first, the rest parts of a sample
        kinds = [par.SAMPLE] + [par.ATTRIBUTE] * (len(cfg.degrees) - 1)
    split = {k for k, d in zip(kinds, cfg.degrees, strict=True) if d > 1}
    if par.PARAMETER in split:
        return "parameter"
    if par.ATTRIBUTE in split:
        return "attribute"
    if par.SAMPLE in split:
        return "data"
    return "whole" if set(cfg.devices) <= {0} else "placed"


def strategy_svg(graph, strategy: Strategy, title: str = "") -> str:
    """SVG text picturing `strategy` on `graph`.

    Args:
        graph: an `OpGraph` (a model's, or its training graph with the losses).
        strategy: the `Strategy` to draw; ops it does not name are drawn dashed ("not in the strategy").
        title: a heading (default: the strategy's source).

    Example:
        >>> svg = strategy_svg(graph, Strategy.data_parallel(graph, 2), "data parallel x2")
    """
    names = node_names(graph)
    configs = strategy.as_dict()
    nodes = list(graph.nodes)
    cols = _columns(nodes)
    box_w = int(min(340, max(170, CHAR_W * max((_label_len(names[n.uid], configs.get(names[n.uid]))
                                                for n in nodes), default=0) + 18)))
    pos = {}
    for c, col in enumerate(cols):
        for r, node in enumerate(col):
            pos[node.uid] = (MARGIN + c * (box_w + COL_GAP), r * (BOX_H + ROW_GAP))
    head = _legend_bottom() + 16
    width = max(MARGIN * 2 + len(cols) * (box_w + COL_GAP) - COL_GAP, 2 * MARGIN + 4 * LEGEND_W)
    height = head + max((len(c) for c in cols), default=0) * (BOX_H + ROW_GAP) + MARGIN
    kinds = {n.uid: split_kind(n, configs.get(names[n.uid])) for n in nodes}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#666"/></marker></defs>',
           f'<rect width="{width}" height="{height}" fill="#fafafa"/>']
    out.append(f'<text x="{MARGIN}" y="22" font-size="15" font-weight="bold">'
               f'{_esc(title or strategy.source)}</text>')
    out += _legend(Counter(kinds.values()), len(nodes), _unknown(strategy, names))
    out.append(f'<g transform="translate(0,{head})">')
    out += _edges(nodes, pos, box_w)
    for node in nodes:
        name = names[node.uid]
        out += _box(node, name, configs.get(name), kinds[node.uid], pos[node.uid], box_w)
    out.append("</g></svg>")
    return "\n".join(out) + "\n"


def write_strategy_svg(path: str, graph, strategy: Strategy, title: str = "") -> None:
    """Write `strategy_svg(graph, strategy, title)` to `path` atomically (a temporary file, then a rename).

    Args:
        path: the .svg file to write. graph, strategy, title: as for `strategy_svg`.

    Raises:
        StrategyError: when the file cannot be written.
    """
    text = strategy_svg(graph, strategy, title)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        raise StrategyError(f"--export-strategy: cannot write the picture {path} ({e.strerror}). Give a path "
                            f"in a writable folder.") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


# --- layout ---------------------------------------------------------------------------------------------
def _producers(node, present: set[int]) -> list:
    return [t.node for t in node.inputs if t.node is not None and t.node.uid in present]


def _columns(nodes) -> list[list]:
    """Nodes grouped by depth; within a column ordered by the mean row of their producers, then topologically."""
    present = {n.uid for n in nodes}
    depth: dict[int, int] = {}
    for node in nodes:  # topological order: producers come first
        depth[node.uid] = 1 + max((depth[p.uid] for p in _producers(node, present)), default=-1)
    cols: list[list] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for node in nodes:
        cols[depth[node.uid]].append(node)
    row: dict[int, float] = {}
    for col in cols:
        keys = {}
        for i, n in enumerate(col):
            rows = [row[p.uid] for p in _producers(n, present)]
            keys[n.uid] = (sum(rows) / len(rows) if rows else i, i)
        col.sort(key=lambda n, keys=keys: keys[n.uid])
        for r, n in enumerate(col):
            row[n.uid] = r
    return cols


def _edges(nodes, pos, box_w) -> list[str]:
    present = {n.uid for n in nodes}
    out, seen = [], set()
    for node in nodes:
        x2, y2 = pos[node.uid]
        for p in _producers(node, present):
            if (p.uid, node.uid) in seen:
                continue
            seen.add((p.uid, node.uid))
            x1, y1 = pos[p.uid]
            x1, y1, y2 = x1 + box_w, y1 + BOX_H / 2, y2 + BOX_H / 2
            mid = (x1 + x2) / 2
            out.append(f'<path d="M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}" fill="none" stroke="#666" '
                       f'stroke-width="1.2" marker-end="url(#arrow)"/>')
    return out


# --- pieces ---------------------------------------------------------------------------------------------
def _config_text(cfg: ParallelConfig | None) -> str:
    return "not in the strategy" if cfg is None else str(cfg)


def _label_len(name: str, cfg: ParallelConfig | None) -> int:
    return max(len(name), len(_config_text(cfg)))


def _fit(text: str, box_w: int) -> str:
    room = int((box_w - 16) / CHAR_W)
    return text if len(text) <= room else text[:room - 1] + "\u2026"


def _box(node, name, cfg, kind, xy, box_w) -> list[str]:
    x, y = xy
    fill = KINDS[kind][1]
    dash = ' stroke-dasharray="4,3"' if kind == "missing" else ""
    shape = tuple(node.outputs[0].shape) if node.outputs else ()
    devices = list(dict.fromkeys(cfg.devices)) if cfg is not None else []
    tip = (f"{name} ({node.op.type_name}), output {shape}\n{KINDS[kind][0]}: {_config_text(cfg)}"
           + (f"\npieces on devices {list(cfg.devices)}" if cfg is not None else ""))
    out = [f'<g class="op {kind}"><title>{_esc(tip)}</title>',
           f'<rect x="{x}" y="{y}" width="{box_w}" height="{BOX_H}" rx="5" fill="{fill}" stroke="#444"{dash}/>',
           f'<text x="{x + 8}" y="{y + 15}" font-weight="bold">{_esc(_fit(name, box_w))}</text>',
           f'<text x="{x + 8}" y="{y + 30}">{_esc(_fit(_config_text(cfg), box_w))}</text>']
    fit = min(MAX_CHIPS, (box_w - 40) // 16)  # leave room for "+n"
    for i, d in enumerate(devices[:fit]):
        cx = x + 8 + i * 16
        out.append(f'<rect x="{cx}" y="{y + 38}" width="14" height="14" rx="2" fill="{_device_colour(d)}"/>'
                   f'<text x="{cx + 7}" y="{y + 48}" font-size="8" fill="#fff" text-anchor="middle">{d}</text>')
    if len(devices) > fit:
        out.append(f'<text x="{x + 10 + fit * 16}" y="{y + 49}">+{len(devices) - fit}</text>')
    out.append("</g>")
    return out


def _legend(counts: Counter, n_ops: int, unknown: list[str]) -> list[str]:
    out = []
    for i, (kind, (label, fill)) in enumerate(KINDS.items()):
        x, y = MARGIN + (i % 4) * LEGEND_W, 36 + (i // 4) * 22
        dash = ' stroke-dasharray="4,3"' if kind == "missing" else ""
        out.append(f'<rect x="{x}" y="{y}" width="16" height="14" fill="{fill}" stroke="#444"{dash}/>'
                   f'<text x="{x + 22}" y="{y + 11}">{_esc(label)} ({counts.get(kind, 0)})</text>')
    note = f"{n_ops} ops; chips: the devices of each op's pieces"
    if unknown:
        note += f"; the strategy also names {len(unknown)} op(s) not in this graph: {', '.join(unknown[:5])}"
    out.append(f'<text x="{MARGIN}" y="{_legend_bottom()}" fill="#555">{_esc(note)}</text>')
    return out


def _legend_bottom() -> int:
    return 36 + 22 * ((len(KINDS) + 3) // 4) + 6


def _unknown(strategy: Strategy, names: dict[int, str]) -> list[str]:
    known = set(names.values())
    return [k for k in strategy.names() if k not in known]


def _device_colour(d: int) -> str:
    """A distinct dark colour per device index (golden-angle hues)."""
    r, g, b = colorsys.hls_to_rgb((d * 0.381966) % 1.0, 0.38, 0.65)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def _esc(text: str) -> str:
    """XML-escaped text (attribute-safe), without the control characters XML 1.0 forbids."""
    text = "".join(c for c in str(text) if c in "\t\n" or ord(c) >= 0x20)
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&apos;"))
