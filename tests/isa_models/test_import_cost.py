"""What a cold start imports: a plain ``refsim run`` none of the cost model, an estimate only the
formula families its program routes through (issue 7: "the estimate adds under 50 ms"). The
timings themselves are benchmarks/cost_model.py's (c); these tests pin the import structure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from isa_models.cortex_m import calibration, formulas

MODELS_DIR = Path(__file__).resolve().parents[2] / "examples" / "models"

#: Modules of the cost model proper (isa_models.errors is shared by the error hierarchy).
COST_MODEL = ("isa_models.cost", "isa_models.cortex_m", "isa_models.cortex_m.formulas",
              "isa_models.cortex_m.calibration", "isa_models.cortex_m.program", "isa_models.cortex_m.cores",
              "isa_models.cortex_m.systems", "isa_models.ethos_u", "refsim.ops.cost",
              "refsim.runtime.estimate")  # fmt: skip


def _modules_after(code: str) -> list[str]:
    """isa_models / refsim.ops.cost / refsim.runtime.estimate modules loaded by ``code`` in a
    fresh interpreter."""
    probe = (
        f"{code}\nimport json, sys\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('isa_models', 'refsim.ops.cost',"
        " 'refsim.runtime.estimate')))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_routes_table_is_what_the_families_give():
    derived = formulas.derived_routes()
    missing = sorted(set(derived) - set(formulas.ROUTES))
    assert not missing, (
        f"add to isa_models.cortex_m.formulas.ROUTES: {', '.join(f'{f!r}: {derived[f]!r}' for f in missing)}"
    )
    assert dict(formulas.ROUTES) == derived
    assert set(formulas.ROUTES.values()) <= set(formulas.FAMILY_NAMES)


def test_every_formula_is_found_through_its_router():
    for key, formula in formulas.FORMULAS.items():
        assert formulas.formula_for(key.split("/")[0], key) is formula
        assert formulas.formula_for(formula.public, key) is formula
    assert [m.__name__ for m in formulas.FAMILIES] == [
        f"isa_models.cortex_m.{n}" for n in formulas.FAMILY_NAMES
    ]


def test_unknown_function_lists_the_known_ones():
    with pytest.raises(formulas.CostModelError, match="arm_softmax_s8"):
        formulas.route("arm_nonexistent_s8", {}, "mve")


def test_calibration_builder_is_reachable_from_the_package():
    from isa_models.cortex_m.calibration import build

    assert calibration.Measurement is build.Measurement
    assert calibration.build_document is build.build_document
    with pytest.raises(AttributeError):
        _ = calibration.no_such_name


@pytest.mark.parametrize(
    "library, core", [(lib, core) for lib, cores in calibration.available().items() for core in cores]
)
def test_loading_without_the_records_gives_the_whole_file(library, core, tmp_path: Path):
    path = calibration.path_for(library, core)
    text = path.read_text()
    whole = calibration.parse(json.loads(text), path)
    assert len(calibration._without_records(text)) < len(text) / 5  # the layout write() makes
    assert calibration.load(core, library) == whole
    compact = tmp_path / library / f"{core}.json"  # another layout: decoded whole, same result
    compact.parent.mkdir()
    compact.write_text(json.dumps(json.loads(text), separators=(",", ":")))
    assert calibration._without_records(compact.read_text()) == compact.read_text()
    assert calibration.load(core, library, root=tmp_path) == calibration.parse(json.loads(text), compact)


def test_evaluate_is_the_fit_prediction():
    from isa_models.fit import predict

    fit = next(iter(calibration.load("cortex-m4", "cmsis-nn").functions.values()))
    features = {name: float(k + 3) for k, name in enumerate(fit.features)}
    for quantity in calibration.QUANTITIES:
        assert fit.evaluate(quantity, features) == predict(fit.coefficients[quantity], features)


def test_plain_run_imports_no_cost_model():
    loaded = _modules_after(
        f"from refsim.cli import main\nassert main(['run', {str(MODELS_DIR / 'kws.pte')!r}, '-q']) == 0"
    )
    assert not [m for m in loaded if m in COST_MODEL], loaded


def test_estimate_imports_only_the_families_it_routes_through():
    loaded = _modules_after(
        "from refsim.runtime import Program\nfrom refsim.runtime.estimate import estimate_method\n"
        f"p = Program.load({str(MODELS_DIR / 'ad.pte')!r})\n"
        "assert estimate_method(p, p.method('forward')).cycles_total > 0"
    )
    families = {m.removeprefix("isa_models.cortex_m.") for m in loaded} & set(formulas.FAMILY_NAMES)
    assert families == {"fully_connected"}, loaded  # AD is linears only
    assert "isa_models.cortex_m.calibration.build" not in loaded


def test_estimate_imports_no_sweep_and_no_other_librarys_loops():
    """The calibration sweeps (``<family>.sweep``) are calibrate's and the tests'; kernels_c's own
    feature functions (``<family>.kernels_c``) load only when kernels_c is the library estimated."""
    code = (
        "from refsim.runtime import Program\nfrom refsim.runtime.estimate import estimate_method\n"
        f"p = Program.load({str(MODELS_DIR / 'kws.pte')!r})\n"
        "assert estimate_method(p, p.method('forward'), library={library!r}).cycles_total > 0"
    )
    default = _modules_after(code.format(library=None))
    assert {"isa_models.cortex_m.conv", "isa_models.cortex_m.depthwise"} <= set(default), default
    assert not [m for m in default if m.endswith((".sweep", ".kernels_c"))], default
    kernels_c = _modules_after(code.format(library="kernels_c"))
    assert {"isa_models.cortex_m.conv.kernels_c", "isa_models.cortex_m.depthwise.kernels_c"} <= set(
        kernels_c
    ), kernels_c
    assert not [m for m in kernels_c if m.endswith(".sweep")], kernels_c


def test_every_family_has_its_sweep():
    for name in formulas.FAMILY_NAMES:
        shapes = formulas.sweep(name)
        assert shapes, name
        assert all(formulas.ROUTES[function] == name for function, _shape in shapes), name


def test_dispatch_members_decode_as_the_whole_file(tmp_path: Path):
    from isa_models.cortex_m import program

    text = program.DISPATCH_DATA.read_text()
    whole = json.loads(text)
    assert program._members(text, ("cores", "provenance")) == {k: whole[k] for k in ("cores", "provenance")}
    compact = json.dumps(whole, separators=(",", ":"))  # another layout: decoded whole
    assert program._members(compact, ("cores", "provenance")) == whole
