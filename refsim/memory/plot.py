"""The arena as a timeline: ``refsim inspect MODEL --plot-memory FILE.png``.

One panel per planned arena. x is the instruction index, y the byte offset in the arena; each
memory-planned tensor is a box spanning its bytes and its lifetime (first to last instruction
that names it, inclusive; inputs start before instruction 0, outputs end after the last).
CMSIS-NN scratch tensors, graph inputs/outputs and activations have their own colours. The
black step line is the live bytes at each instruction (distinct bytes of the tensors live then;
its maximum is a lower bound of any plan's arena for this instruction order) and the dashed line
the arena size the program declares.
"""

from __future__ import annotations

from pathlib import Path

from refsim.pte import model as m
from refsim.runtime.plan import Placement

COLOURS = {"activation": "#4c72b0", "scratch": "#dd8452", "input/output": "#55a868"}


def _kind(p: Placement, scratch: set[int], io: set[int]) -> str:
    if p.value in scratch:
        return "scratch"
    return "input/output" if p.value in io else "activation"


def live_bytes(placements: list[Placement], memory_id: int, steps: int) -> list[int]:
    """Distinct arena bytes live at each instruction -1 .. steps (views of the same bytes once)."""
    out = []
    for t in range(-1, steps + 1):
        spans = sorted(
            (p.start, p.end)
            for p in placements
            if p.memory_id == memory_id and p.first_use <= t <= p.last_use
        )
        covered, cur_start, cur_end = 0, None, None
        for start, end in spans:
            if cur_end is not None and start <= cur_end:
                cur_end = max(cur_end, end)
                continue
            if cur_end is not None:
                covered += cur_end - cur_start
            cur_start, cur_end = start, end
        if cur_end is not None:
            covered += cur_end - cur_start
        out.append(covered)
    return out


def _op_labels(plan: m.ExecutionPlan) -> list[str]:
    labels = []
    for ins in plan.chains[0].instructions if plan.chains else ():
        if isinstance(ins, m.KernelCall):
            name = plan.operators[ins.op_index].name.split("::")[-1]
            labels.append(name.replace("quantized_", "q_"))
        else:
            labels.append(type(ins).__name__)
    return labels


def plot_memory(
    plan: m.ExecutionPlan, placements: list[Placement], scratch: set[int], out: Path, title: str
) -> None:
    """Write the PNG. matplotlib with the Agg backend (no display needed)."""
    import matplotlib  # only this face needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    arenas = [k for k, size in enumerate(plan.non_const_buffer_sizes) if k > 0 and size > 0]
    steps = sum(len(c.instructions) for c in plan.chains)
    io = set(plan.inputs) | set(plan.outputs)
    labels = _op_labels(plan)
    width = min(max(8.0, 0.34 * steps + 5.0), 16.0)
    fig, axes = plt.subplots(len(arenas) or 1, 1, figsize=(width, 4.8 * max(len(arenas), 1)), squeeze=False)
    for ax, mem in zip(axes[:, 0], arenas or [1], strict=False):
        size = plan.non_const_buffer_sizes[mem] if mem < len(plan.non_const_buffer_sizes) else 0
        for p in placements:
            if p.memory_id != mem:
                continue
            kind = _kind(p, scratch, io)
            left, right = p.first_use - 0.45, p.last_use + 0.45
            ax.add_patch(
                Rectangle(
                    (left, p.start),
                    right - left,
                    p.end - p.start,
                    facecolor=COLOURS[kind],
                    edgecolor="white",
                    linewidth=0.6,
                    alpha=0.85,
                )
            )
        live = live_bytes(placements, mem, steps)
        xs = list(range(-1, steps + 1))
        ax.step(xs, live, where="mid", color="black", linewidth=1.4)
        ax.axhline(size, color="grey", linestyle="--", linewidth=1.0)
        ax.set_xlim(-1.6, steps + 0.6)
        ax.set_ylim(0, max(size, max(live, default=0)) * 1.08 or 1)
        ax.set_ylabel(f"arena {mem}: byte offset")
        top = max(size, max(live, default=0))
        if top >= 4096:
            step = 1024
            while top / step > 8:
                step *= 2
            ax.yaxis.set_major_locator(matplotlib.ticker.MultipleLocator(step))
            ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1024:g} KiB"))
        peak = max(live, default=0)
        ax.set_title(
            f"{title} — arena {mem}: {size:,} B planned, live-bytes bound {peak:,} B "
            f"({100.0 * peak / size if size else 0:.0f}%)",
            fontsize=10,
        )
        if steps <= 60:
            ax.set_xticks(range(steps))
            ax.set_xticklabels(
                [f"{i} {lab}" for i, lab in enumerate(labels)], rotation=60, ha="right", fontsize=7
            )
        ax.set_xlabel("instruction")
        ax.grid(axis="y", linewidth=0.3, alpha=0.5)
    handles = [Patch(color=c, label=k) for k, c in COLOURS.items()]
    handles += [
        matplotlib.lines.Line2D([], [], color="black", label="live bytes (lower bound)"),
        matplotlib.lines.Line2D([], [], color="grey", linestyle="--", label="planned arena size"),
    ]
    axes[0, 0].legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False
    )
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
