"""docs/ops.md, generated from the op registry: ``python -m refsim.ops.docs > docs/ops.md``.

One section per namespace (cortex_m, aten, dim_order_ops, quantized_decomposed, then any
other), each a summary table and one entry per operator: its schema as registered, the
CMSIS-NN kernel that computes it (a fixed function, one chosen per call by shape and ISA, or
none: a portable fallback or ExecuTorch's own C++ loop), which hooks it has (validator at
load, MAC count, scratch bytes) and the first paragraph of its docstring.
tests/runtime/test_ops_doc.py fails when docs/ops.md differs from what this prints.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable

from refsim.ops.registry import OpDef, all_ops

COMMAND = "python -m refsim.ops.docs > docs/ops.md"
NAMESPACE_ORDER = ("cortex_m", "aten", "dim_order_ops", "quantized_decomposed", "tflm")
NAMESPACE_NOTES = {
    "cortex_m": "ExecuTorch's Cortex-M operator dialect (backends/cortex_m): CMSIS-NN kernels, bit-exact.",
    "aten": "Portable (ExecuTorch kernels/portable) float and layout ops, for what stays off CMSIS-NN.",
    "dim_order_ops": "Layout changes between dim orders (contiguous and channels-last).",
    "quantized_decomposed": "Quantize/dequantize at the graph's edges (kernels/quantized).",
    "tflm": (
        "TFLM's kernels, which a `.tflite` model is lowered to (refsim/tflite/lower*.py; no `.pte` "
        "names them): its cmsis_nn kernels on CMSIS-NN, its reference kernels where it has no CMSIS-NN "
        "call, TFLM's Prepare arithmetic done by the lowering."
    ),
}
_CMSIS_NAME = re.compile(r"\b(arm_\w+)")


def namespace(op: OpDef) -> str:
    return op.schema.namespace


def kernel_text(op: OpDef) -> str:
    """What computes the op, for the table: a CMSIS-NN function or why there is none."""
    if isinstance(op.kernel, str):
        return f"`{op.kernel}`"
    if op.kernel is not None:  # chosen per call, from the shapes and the ISA tier
        wrapper = _CMSIS_NAME.search(op.doc)
        return f"`{wrapper.group(1)}` (kernel by shape and ISA)" if wrapper else "chosen by shape and ISA"
    if op.portable_fallback:
        return "portable fallback"
    return "none (ExecuTorch C++ loop)"


def first_paragraph(doc: str) -> str:
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in paragraph.splitlines()).strip()


def _yes(flag: object) -> str:
    return "yes" if flag else "—"


def grouped(ops: dict[str, OpDef]) -> list[tuple[str, list[OpDef]]]:
    namespaces = sorted({namespace(op) for op in ops.values()})
    order = [n for n in NAMESPACE_ORDER if n in namespaces] + [
        n for n in namespaces if n not in NAMESPACE_ORDER
    ]
    return [(n, [op for name, op in sorted(ops.items()) if namespace(op) == n]) for n in order]


def render(ops: dict[str, OpDef] | None = None) -> str:
    """The whole of docs/ops.md for ``ops`` (default: every registered operator)."""
    ops = all_ops() if ops is None else ops
    groups = grouped(ops)
    lines = [
        "# Supported operators",
        "",
        f"<!-- Generated from refsim's op registry by `{COMMAND}`; do not edit by hand. -->",
        "",
        "Every operator refsim's runtime runs, by the name a `.pte` program's operator table spells",
        "(`name.overload`). A program using any other fails at `program.method()` with",
        "`operator ... is not supported`; `refsim inspect` still describes it.",
        "",
        f"{len(ops)} operators: " + ", ".join(f"{n} {len(members)}" for n, members in groups) + ".",
        "",
        'Columns: **kernel** is the CMSIS-NN function that computes the op ("by shape and ISA": the',
        "wrapper picks one per call, as `refsim run --isa` reports); *portable fallback* is",
        "ExecuTorch's portable C++ kernel, reproduced bit for bit; *ExecuTorch C++ loop* is a",
        "cortex_m op ExecuTorch computes without CMSIS-NN. **validator**: arguments are checked at",
        "load, so execution can trust them. **MACs** and **scratch**: the op reports its",
        "multiply-accumulates and its CMSIS-NN scratch buffer per ISA.",
        "",
        "Device divergences: where the device computes something other than the operator (a kernel",
        "that ignores dim_order, an argument the ISA's CMSIS-NN build ignores or refuses), refsim",
        "computes what the device computes and records why; `refsim inspect` lists them, `refsim",
        "run --strict` refuses them (refsim/ops/divergence.py). An entry's *ISA divergences* hook",
        "names those that depend on `--isa`; *in place* marks ops whose out may share its first",
        "tensor argument's bytes (ExecuTorch's reinplace pass; see refsim/runtime/plan.py).",
    ]
    for name, members in groups:
        lines += ["", f"## {name} ({len(members)})", ""]
        if name in NAMESPACE_NOTES:
            lines += [NAMESPACE_NOTES[name], ""]
        lines += ["| operator | kernel | validator | MACs | scratch |", "|---|---|---|---|---|"]
        lines += [
            f"| [`{op.name}`](#{_anchor(op.name)}) | {kernel_text(op)} | {_yes(op.validate)} | "
            f"{_yes(op.macs)} | {_yes(op.scratch)} |"
            for op in members
        ]
        for op in members:
            lines += _entry(op)
    return "\n".join(lines) + "\n"


def _anchor(name: str) -> str:
    """GitHub's heading anchor for ``### `name` ``: lowercase, punctuation but - and _ dropped."""
    return re.sub(r"[^\w\- ]", "", name.lower()).replace(" ", "-")


def _entry(op: OpDef) -> Iterable[str]:
    hooks = ", ".join(
        label
        for label, fn in (
            ("validator", op.validate),
            ("MACs", op.macs),
            ("scratch", op.scratch),
            ("ISA divergences", op.divergences),
            ("in place", op.in_place_safe),
        )
        if fn
    )
    yield ""
    yield f"### {op.name}"
    yield ""
    yield "```"
    yield op.schema.text
    yield "```"
    yield ""
    yield f"Kernel: {kernel_text(op)}. Hooks: {hooks or 'none'}."
    doc = first_paragraph(op.doc)
    if doc:
        yield ""
        yield doc


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
