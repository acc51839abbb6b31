"""``refsim eval``: numbers checked against an independent computation, and the one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from refsim.runtime import Program
from refsim.runtime.describe import io_quantization
from tests.cli_util import assert_one_error_line, refsim

ROOT = Path(__file__).resolve().parents[2]
KWS = ROOT / "examples" / "models" / "kws.pte"
N = 40


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("eval")
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (N, 1, 1, 49, 10), dtype=np.int8)
    method = Program.load(KWS).method()
    single = np.stack([method.execute([xi])[0] for xi in x])
    labels = np.argmax(single.reshape(N, -1), axis=1)
    labels[::4] = (labels[::4] + 1) % 12  # a quarter wrong on purpose
    np.savez(d / "data.npz", input0=x)
    np.save(d / "labels.npy", labels)
    ref = rng.standard_normal((N, 1, 12))
    np.savez(d / "ref.npz", output0=ref)
    return d, x, single, labels, ref


def test_eval_reports_what_single_runs_give(data, capsys, tmp_path):
    d, _, single, labels, ref = data
    out, report_path, png = tmp_path / "out.npz", tmp_path / "r.json", tmp_path / "c.png"
    code, stdout, err = refsim(
        capsys, "eval", KWS, "--inputs", d / "data.npz", "--labels", d / "labels.npy",
        "--reference", d / "ref.npz", "--batch", "7", "--outputs", out, "--json", report_path, "--plot", png,
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(report_path.read_text())
    with np.load(out) as z:
        np.testing.assert_array_equal(z["output0"], single)
    predicted = np.argmax(single.reshape(N, -1), axis=1)
    assert report["samples"] == N
    assert report["correct"] == int(np.sum(predicted == labels)) == N - N // 4
    assert report["accuracy"] == pytest.approx((N - N // 4) / N)
    confusion = np.asarray(report["confusion_matrix"])
    assert confusion.shape == (12, 12) and confusion.sum() == N and np.trace(confusion) == report["correct"]
    q = io_quantization(Program.load(KWS), "forward", "output", 0)
    deq = (single.astype(np.float64) - q.zero_point) * q.scale
    noise = np.sum((ref - deq) ** 2)
    # float sums in a different order than the command's: equal to ~1e-12 relative
    assert report["snr_db"] == pytest.approx(10 * np.log10(np.sum(ref**2) / noise), rel=1e-9)
    agree = np.mean(np.argmax(ref.reshape(N, -1), 1) == predicted)
    assert report["agreement"] == pytest.approx(agree)
    assert report["samples_per_s"] > 0 and png.stat().st_size > 1000
    assert "confusion" in stdout and "accuracy" in stdout


def test_float_inputs_are_quantized_as_run_does(data, capsys, tmp_path):
    _, x, single, _, _ = data
    q = io_quantization(Program.load(KWS), "forward", "input", 0)
    floats = ((x.astype(np.float32) - q.zero_point) * q.scale).astype(np.float32)
    np.savez(tmp_path / "f.npz", input0=floats)
    code, _, err = refsim(
        capsys, "eval", KWS, "--inputs", tmp_path / "f.npz", "--outputs", tmp_path / "o.npz", "-q"
    )
    assert code == 0, err
    with np.load(tmp_path / "o.npz") as z:
        np.testing.assert_array_equal(z["output0"], single)


def bad(tmp_path, name: str, **arrays) -> Path:
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize(
    ("make", "extra", "fragment"),
    [
        (lambda p: p / "missing.npz", [], "no such file"),
        (lambda p: (p / "junk.npz").write_bytes(b"not a zip") and p / "junk.npz", [], "not a readable .npz"),
        (lambda p: bad(p, "a.npz", input0=np.zeros((3, 1, 49, 10), np.int8)), [], "a leading sample axis"),
        (lambda p: bad(p, "b.npz", x=np.zeros((3, 1, 1, 49, 10), np.int8)), [], "unexpected arrays ['x']"),
        (lambda p: bad(p, "c.npz", input0=np.zeros((3, 1, 1, 49, 10), np.int16)), [], "dtype int16"),
        (lambda p: bad(p, "d.npz", input0=np.zeros((0, 1, 1, 49, 10), np.int8)), [], "no samples"),
    ],
)
def test_malformed_data_is_one_line(make, extra, fragment, tmp_path, capsys):
    path = make(tmp_path)
    assert_one_error_line(refsim(capsys, "eval", KWS, "--inputs", path, *extra), fragment)


@pytest.mark.parametrize(
    ("labels", "fragment"),
    [
        (np.zeros(N - 1, np.int64), f"{N - 1} labels for {N} samples"),
        (np.full(N, 0.5), "must be integers"),
        (np.full(N, 12), "class index 12 but the model has 12 output values"),
        (np.full(N, -1), "negative class index"),
        (np.zeros((N, 3), np.int64), "one class index per sample"),
    ],
)
def test_bad_labels_are_one_line(data, labels, fragment, tmp_path, capsys):
    d = data[0]
    np.save(tmp_path / "l.npy", labels)
    result = refsim(capsys, "eval", KWS, "--inputs", d / "data.npz", "--labels", tmp_path / "l.npy")
    assert_one_error_line(result, fragment)


def test_bad_reference_is_one_line(data, tmp_path, capsys):
    d = data[0]
    ref = bad(tmp_path, "r.npz", output0=np.zeros((N - 2, 12)))
    assert_one_error_line(
        refsim(capsys, "eval", KWS, "--inputs", d / "data.npz", "--reference", ref), "expected 40 samples"
    )
    ref = bad(tmp_path, "r2.npz", output0=np.zeros((N, 11)))
    assert_one_error_line(
        refsim(capsys, "eval", KWS, "--inputs", d / "data.npz", "--reference", ref), "11 values per sample"
    )


def test_plot_needs_labels(data, tmp_path, capsys):
    result = refsim(capsys, "eval", KWS, "--inputs", data[0] / "data.npz", "--plot", tmp_path / "c.png")
    assert_one_error_line(result, "needs --labels")


def test_eval_runs_a_tflite_through_the_same_path(capsys, tmp_path):
    """A .tflite is lowered into the same program (refsim/tflite/lower.py): eval gives each
    sample what a single run gives it."""
    tflite = ROOT / "tests" / "fixtures" / "tflite" / "kws_ref_model.tflite"
    x = np.random.default_rng(3).integers(-128, 128, (12, 1, 49, 10, 1), dtype=np.int8)
    method = Program.load(tflite).method()
    single = np.stack([method.execute([xi])[0] for xi in x])
    np.savez(tmp_path / "d.npz", input0=x)
    code, _, err = refsim(capsys, "eval", tflite, "--inputs", tmp_path / "d.npz", "--batch", "5",
                          "--outputs", tmp_path / "o.npz")  # fmt: skip
    assert code == 0, err
    with np.load(tmp_path / "o.npz") as z:
        np.testing.assert_array_equal(z["output0"], single)
