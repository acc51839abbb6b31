"""The Pareto plot of `refsim sweep --plot`: latency against RAM, one panel per model, one colour
per core, each model's Pareto front starred and joined, the budgets as lines, the points meeting
both ringed in green."""

from __future__ import annotations

import math
from pathlib import Path

from refsim.errors import RefsimError


def plot_pareto(rows: list[dict], out: Path, budget_ram: int | None, budget_ms: float | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in rows))
    cores = list(dict.fromkeys(r["cpu"] for r in rows))
    colours = {c: plt.get_cmap("tab10")(i % 10) for i, c in enumerate(cores)}
    cols = min(len(models), 3)
    nrows = math.ceil(len(models) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.8 * nrows), squeeze=False)
    for ax, model in zip(axes.flat, models, strict=False):
        mine = [r for r in rows if r["model"] == model and r["error"] is None and r["ram_bytes"] is not None]
        for core in cores:
            pts = [r for r in mine if r["cpu"] == core]
            if pts:
                ax.scatter([r["ram_bytes"] / 1024 for r in pts], [r["latency_ms"] for r in pts],
                           s=22, color=colours[core], label=core, zorder=3)  # fmt: skip
        front = sorted((r for r in mine if r["pareto"]), key=lambda r: (r["ram_bytes"], r["latency_ms"]))
        if front:  # one point when RAM does not depend on the core (a .pte's arenas are planned once)
            xs, ys = [r["ram_bytes"] / 1024 for r in front], [r["latency_ms"] for r in front]
            ax.step(xs, ys, where="post", color="0.4", lw=1, zorder=2)
            ax.scatter(xs, ys, marker="*", s=90, color="black", zorder=5, label="Pareto front")
        good = [r for r in mine if r["meets_budget"]]
        if good:
            ax.scatter([r["ram_bytes"] / 1024 for r in good], [r["latency_ms"] for r in good], s=110,
                       facecolors="none", edgecolors="green", lw=1.6, zorder=4, label="meets both budgets")  # fmt: skip
        if budget_ms is not None:
            ax.axhline(budget_ms, color="red", ls="--", lw=1, label=f"{budget_ms:g} ms")
        if budget_ram is not None:
            ax.axvline(budget_ram / 1024, color="purple", ls="--", lw=1, label=f"{budget_ram / 1024:g} KiB")
        failed = sum(1 for r in rows if r["model"] == model and r["error"] is not None)
        ax.set_title(Path(model).name + (f" ({failed} targets cannot run it)" if failed else ""), fontsize=9)
        ax.set_xlabel("RAM (KiB)")
        ax.set_ylabel("latency (ms)")
        if mine and max(r["latency_ms"] for r in mine) > 20 * max(min(r["latency_ms"] for r in mine), 1e-9):
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    for ax in list(axes.flat)[len(models) :]:
        ax.set_visible(False)
    fig.suptitle("refsim sweep: latency vs RAM", fontsize=11)
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=110)
    except OSError as exc:
        raise RefsimError(f"--plot {out}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
