"""Device divergences: where what the device computes departs from the operator's definition.

ExecuTorch 1.5.1's cortex_m kernels hand CMSIS-NN raw bytes with dims taken from the logical
``sizes`` and never look at ``dim_order``; some ops carry arguments only one CMSIS-NN build
reads. A program exported that way computes, on the device, something other than its
PyTorch op. refsim computes what the device computes (its job is to be bit-exact with the
device) and records each such call as a `Divergence` at load, so that ``refsim inspect``
lists them, ``refsim run --strict`` refuses to run a program with one, and the JSON reports
carry them.

Kinds:

* ``layout``: a kernel reads or writes bytes in an order other than the tensors' dim orders
  say (issued by ``cortex_m_elementwise.warn_layout``, which also raises a `LayoutWarning`);
* ``ignored_argument``: the program carries an argument that the CMSIS-NN build of the
  chosen ISA does not read (hooks ``OpDef.divergences(args, isa)``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Divergence:
    """One call whose device result is not the operator's result, and why."""

    op: str
    instruction: int
    kind: str
    arguments: tuple[str, ...]
    reason: str

    def as_dict(self) -> dict:
        d = asdict(self)
        d["arguments"] = list(self.arguments)
        return d

    def __str__(self) -> str:
        return f"{self.op} (instruction {self.instruction}): {self.reason}"
