"""The grouped bar chart of `refsim compare --plot`: latency, RAM and flash of A and B."""

from __future__ import annotations

from pathlib import Path

from refsim.errors import RefsimError


def plot_totals(report: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a, b = report["a"], report["b"]
    panels = (
        ("latency_ms", "latency (ms)", 1.0),
        ("ram_bytes", "RAM (KiB)", 1024.0),
        ("flash_bytes", "flash (KiB)", 1024.0),
    )
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.4))
    labels = [f"A {a['runtime']}", f"B {b['runtime']}"]
    for ax, (key, title, scale) in zip(axes, panels, strict=True):
        values = [None if s[key] is None else s[key] / scale for s in (a, b)]
        heights = [0.0 if v is None else v for v in values]
        bars = ax.bar(labels, heights, color=["#4c72b0", "#dd8452"])
        for bar, v in zip(bars, values, strict=True):
            ax.annotate("n/a" if v is None else f"{v:,.1f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=8)  # fmt: skip
        ax.set_title(title)
    fig.suptitle(f"{Path(a['path']).name} vs {Path(b['path']).name} on {report['cpu']}")
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=120)
    except OSError as exc:
        raise RefsimError(f"--plot {out}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
