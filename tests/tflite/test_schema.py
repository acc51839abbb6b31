"""refsim/tflite/schema.py and options.py hold exactly what TFLite's schema.fbs says: enum
numbers, the BuiltinOptions union's order, every vtable slot refsim reads or writes, and the
decoded options tables' fields with their types and defaults. Runs when the schema is at hand
(tests/tflite/schema_source.py)."""

from __future__ import annotations

import pytest

from refsim.tflite import schema as s
from refsim.tflite.options import OPTIONS_OF, TABLES
from tests.tflite.schema_source import enums, schema_text, slots, tables, unions

TEXT = schema_text()
pytestmark = pytest.mark.skipif(TEXT is None, reason="no TFLite schema.fbs at hand (see schema_source.py)")
SLOT_TABLES = ["Model", "OperatorCode", "SubGraph", "Tensor", "QuantizationParameters", "Operator", "Buffer"]
SLOT_TABLES += ["Metadata", "TensorMap", "SignatureDef"]
#: The flatbuffers scalar type of each _flatbuf kind options.py uses.
KINDS = {"i8": {"byte"}, "i32": {"int", "int32"}, "bool": {"bool"}, "f32": {"float"}, "[i32]": {"[int]"}}


def test_identifier_and_version():
    assert f'file_identifier "{s.FILE_IDENTIFIER.decode()}";' in TEXT
    assert "root_type Model;" in TEXT


@pytest.mark.parametrize("enum", [s.TensorType, s.BuiltinOperator, s.Padding, s.ActivationFunctionType])
def test_enum_numbers(enum):
    assert {e.name: e.value for e in enum} == enums(TEXT)[enum.__name__]


def test_weights_format_enum():
    expected = enums(TEXT)["FullyConnectedOptionsWeightsFormat"]
    assert {e.name: e.value for e in s.FullyConnectedOptionsWeightsFormat} == expected


def test_builtin_options_union_order():
    assert list(s.BUILTIN_OPTIONS) == ["NONE", *unions(TEXT)["BuiltinOptions"]]


@pytest.mark.parametrize("name", SLOT_TABLES)
def test_vtable_slots(name):
    union_names = set(unions(TEXT))
    expected = slots(tables(TEXT)[name], union_names)
    ours = {k: v for k, v in vars(getattr(s, name)).items() if not k.startswith("_") and k != "n_fields"}
    assert ours == expected
    assert getattr(s, name).n_fields == max(expected.values()) + 1


@pytest.mark.parametrize("name", sorted(TABLES))
def test_options_tables(name):
    schema_fields = tables(TEXT)[name]
    assert [f.name for f in TABLES[name]] == [f for f, _, _ in schema_fields]
    for ours, (field, type_, default) in zip(TABLES[name], schema_fields, strict=True):
        if ours.enum is not None:
            assert type_ == ours.enum.__name__, field
            assert ours.default == ours.enum[default or ours.enum(0).name], field
        else:
            assert type_ in KINDS[ours.kind], field
            if ours.kind == "bool":
                assert ours.default == (default == "true"), field
            elif ours.kind != "[i32]":
                assert (
                    ours.default == (float(default) if ours.kind == "f32" else int(default))
                    if default
                    else not ours.default
                ), field


def test_every_decoded_builtin_names_a_table_of_the_union():
    members = set(unions(TEXT)["BuiltinOptions"])
    assert {t for t in OPTIONS_OF.values() if t is not None} <= members
