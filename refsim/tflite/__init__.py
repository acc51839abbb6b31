"""TFLite models (.tflite, schema 3, identifier "TFL3"): a validating reader and a writer.

    from refsim.tflite import load_model
    mf = load_model("kws_ref_model.tflite")   # every index, size and offset checked
    mf.model.subgraphs[0].operators            # frozen dataclasses (model.py)

The second front door of the house (DESIGN.md): this package reads a .tflite; running it is
issue 15's next step. docs/tflite.md says what is read and checked.
"""

from refsim.tflite.errors import ModelError
from refsim.tflite.model import (
    Buffer,
    Metadata,
    Model,
    Operator,
    OperatorCode,
    Quantization,
    SignatureDef,
    SubGraph,
    Tensor,
)
from refsim.tflite.reader import ModelFile, load_model
from refsim.tflite.schema import BuiltinOperator, TensorType

__all__ = [
    "Buffer",
    "BuiltinOperator",
    "Metadata",
    "Model",
    "ModelError",
    "ModelFile",
    "Operator",
    "OperatorCode",
    "Quantization",
    "SignatureDef",
    "SubGraph",
    "Tensor",
    "TensorType",
    "load_model",
]
