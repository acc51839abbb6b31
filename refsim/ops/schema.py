"""Operator schemas as PyTorch spells them, parsed into argument specs.

An op registers with the exact schema string ExecuTorch's program was exported against
(``torch.ops.cortex_m.quantized_add.out._schema``), e.g.::

    cortex_m::quantized_add.out(Tensor self, int self_zero_point, ..., *, Tensor(a!) out) -> Tensor(a!)

From it the runtime knows the argument names, which EValue kinds each accepts and which
arguments are outputs. Parsing this small grammar by hand avoids importing torch (the
runtime never does) for ``torch._C.parse_schema``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from refsim.pte.model import ValueKind

_NAME = re.compile(
    r"^(?P<ns>[A-Za-z_][\w]*)::(?P<op>[A-Za-z_][\w]*)(?:\.(?P<overload>[\w]+))?\((?P<args>.*)\)\s*->"
)
_ARG = re.compile(
    r"^(?P<type>[A-Za-z]+)(?P<alias>\([a-z]!?\))?(?P<list>\[\d*\])?(?P<opt>\?)?(?P<list2>\[\d*\])?\s+(?P<name>\w+)(?:=.*)?$"
)

_SCALAR_KINDS = {
    "Tensor": (ValueKind.TENSOR,),
    "int": (ValueKind.INT,),
    "SymInt": (ValueKind.INT,),
    "ScalarType": (ValueKind.INT,),
    "MemoryFormat": (ValueKind.INT,),
    "Layout": (ValueKind.INT,),
    "Device": (ValueKind.INT, ValueKind.STRING),
    "float": (ValueKind.DOUBLE,),
    "bool": (ValueKind.BOOL,),
    "str": (ValueKind.STRING,),
    "Scalar": (ValueKind.INT, ValueKind.DOUBLE, ValueKind.BOOL),
}
_LIST_KINDS = {
    "int": (ValueKind.INT_LIST,),
    "SymInt": (ValueKind.INT_LIST,),
    "float": (ValueKind.DOUBLE_LIST,),
    "bool": (ValueKind.BOOL_LIST,),
    "Tensor": (ValueKind.TENSOR_LIST,),
}


@dataclass(frozen=True)
class ArgSpec:
    """One schema argument: its name, type text and the EValue kinds that may carry it."""

    name: str
    type: str
    kinds: tuple[ValueKind, ...]
    optional: bool
    is_list: bool
    is_out: bool


@dataclass(frozen=True)
class OpSchema:
    """A parsed schema: ``qualified_name`` is the key a .pte's operator table uses."""

    namespace: str
    name: str
    overload: str
    args: tuple[ArgSpec, ...]
    text: str

    @property
    def qualified_name(self) -> str:
        base = f"{self.namespace}::{self.name}"
        return f"{base}.{self.overload}" if self.overload else base

    @property
    def outputs(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.is_out)


def parse_schema(text: str) -> OpSchema:
    """Parse a PyTorch operator schema string (the subset ExecuTorch's ops use)."""
    m = _NAME.match(text.strip())
    if not m:
        raise ValueError(f"not an operator schema: {text!r}")
    args: list[ArgSpec] = []
    keyword_only = False
    for raw in _split_args(m["args"]):
        if raw == "*":
            keyword_only = True
            continue
        a = _ARG.match(raw)
        if not a:
            raise ValueError(f"cannot parse argument {raw!r} of {text!r}")
        base = a["type"]
        is_list = bool(a["list"] or a["list2"])
        optional = bool(a["opt"])
        table = _LIST_KINDS if is_list else _SCALAR_KINDS
        if base not in table:
            raise ValueError(f"unsupported argument type {raw!r} in {text!r}")
        kinds = table[base]
        if is_list and base == "Tensor" and a["opt"] and a["list2"]:
            kinds = (ValueKind.OPTIONAL_TENSOR_LIST,)  # Tensor?[]
            optional = False
        if optional:
            kinds = (*kinds, ValueKind.NULL)
        is_out = keyword_only and a["alias"] is not None and "!" in a["alias"]
        args.append(ArgSpec(a["name"], raw.rsplit(" ", 1)[0], kinds, optional, is_list, is_out))
    return OpSchema(m["ns"], m["op"], m["overload"] or "", tuple(args), text.strip())


def _split_args(body: str) -> list[str]:
    """Split on top-level commas (defaults such as ``int[2] x=[1, 1]`` contain commas)."""
    parts, depth, cur = [], 0, []
    for ch in body:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts
