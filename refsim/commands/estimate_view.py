"""How ``refsim run --estimate-cycles`` shows an estimate: the per-op table and the bar chart."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from refsim.errors import RefsimError
from refsim.runtime.estimate import Estimate


def _short(name: str) -> str:
    return name.removesuffix(".out").replace("cortex_m::", "").replace("aten::", "")


def print_estimate(console, est: Estimate, memory: dict, estimate_ms: float) -> None:
    t = est.target
    total = est.total.cycles
    system = getattr(t.system, "name", "-")
    table = Table(
        "#", "op", "CMSIS-NN variant", "MACs", "cycles", "share", "cycles/MAC",
        title=f"estimate: {t.cpu} ({t.isa}), system {system}, {est.library} calibration"
              + (f"\nCMSIS-NN build: {est.profile}" if getattr(est, "profile", "") else ""),
    )  # fmt: skip
    for r in est.rows:
        if r.estimated:
            cycles = f"{r.cost.cycles:,.0f}"
            share = f"{100 * r.cost.cycles / total:.1f}%" if total else "-"
            per_mac = f"{r.cost.cycles / r.cost.macs:.2f}" if r.cost.macs else "-"
        else:
            cycles, share, per_mac = "no estimate", "-", "-"
        index = "" if r.index is None else str(r.index)
        table.add_row(index, _short(r.name), r.variant + (f" ({r.note})" if r.note else ""),
                      f"{r.cost.macs:,}" if r.cost.macs else "-", cycles, share, per_mac)  # fmt: skip
    console.print(table)
    basis = getattr(est, "basis", "")
    if basis == "shape only":
        console.print(
            "shape-only estimate: data-dependent rows are priced at their bound (no values: refsim run "
            "prices its own inputs)",
            highlight=False,
        )
    elif basis == "run inputs":
        console.print("data-dependent rows priced on this run's inputs", highlight=False)
    macs = sum(r.cost.macs for r in est.rows if r.index is not None)
    bound = "" if est.complete else " (lower bound: some ops have no estimate)"
    arenas = ", ".join(f"{v:,}" for v in memory["arena_bytes"].values()) or "0"
    console.print(
        f"total {est.cycles_total:,} cycles{bound} = {est.latency_ms:.3f} ms at {t.clock_mhz:g} MHz "
        f"({t.clock_note}); {macs:,} MACs, {est.cycles_total / macs if macs else 0:.2f} cycles/MAC",
        highlight=False,
    )
    console.print(
        f"arena {arenas} B, scratch {memory['scratch_bytes']:,} B, constants {memory['constant_bytes']:,} B; "
        f"estimate took {estimate_ms:.1f} ms",
        highlight=False,
    )


def plot_estimate(est: Estimate, path: Path, *, title: str = "") -> None:
    """A per-op cycle bar chart (matplotlib, Agg backend)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RefsimError(
            "--plot needs matplotlib: pip install matplotlib (a dependency of refsim; make venv installs it)"
        ) from None
    rows = [r for r in est.rows if r.estimated]
    labels = [f"{'' if r.index is None else r.index} {_short(r.name)}" for r in rows]
    cycles = [r.cost.cycles for r in rows]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * len(rows) + 2), 4.5))
    ax.bar(range(len(rows)), cycles, color="#3a6ea5")
    ax.set_xticks(range(len(rows)), labels, rotation=75, ha="right", fontsize=7)
    ax.set_ylabel("cycles")
    t = est.target
    ax.set_title(f"{title} on {t.cpu} ({t.isa}): {est.cycles_total:,} cycles, {est.latency_ms:.2f} ms at {t.clock_mhz:g} MHz",
                 fontsize=9)  # fmt: skip
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
