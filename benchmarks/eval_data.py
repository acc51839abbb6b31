"""A labelled data set for each bundled program, from its own float model: what `refsim eval` is shown on.

    .venv-interop/bin/python benchmarks/eval_data.py [--samples 10000] [--out /tmp/refsim-eval]
    refsim eval examples/models/kws.pte --inputs /tmp/refsim-eval/kws.npz \\
        --labels /tmp/refsim-eval/kws.labels.npy --reference /tmp/refsim-eval/kws.ref.npz

The bundled programs have random weights (examples/models/README.md), so there is no real test set
to score them on. What can be scored is how faithfully the int8 program follows the float model
it was quantized from: inputs are drawn as the calibration data were (uniform in [-1, 1), a
different seed), the float model (compiler.zoo, the bundled BatchNorm shifts) gives the reference
outputs, and their argmax is the label. Accuracy is then the top-1 agreement of the device's int8
result with the float model. Needs torch (the interop venv); writes float inputs (float16 for VWW,
to keep 10,000 images near 550 MB), which `refsim eval` quantizes with the program's input plan.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "models"))

import make_models  # noqa: E402  (examples/models/make_models.py: the bundled modules)

SEED = 2026


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=10_000)
    ap.add_argument("--models", default="kws,vww,ic,ad")
    ap.add_argument("--out", type=Path, default=Path("/tmp/refsim-eval"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.models.split(","):
        spec = make_models.MODELS[name]
        model = make_models.build(spec).eval()
        generator = torch.Generator().manual_seed(SEED)
        x = torch.rand((args.samples, *spec.shape[1:]), generator=generator) * 2 - 1
        with torch.no_grad():
            y = torch.cat([model(chunk.contiguous(memory_format=torch.channels_last) if chunk.dim() == 4 else chunk)
                           for chunk in x.split(500)])  # fmt: skip
        inputs = x.numpy()[:, None]  # [N, 1, ...]: the program's input has a batch of 1
        if name == "vww":
            inputs = inputs.astype(np.float16)
        ref = y.numpy()[:, None]
        np.savez(args.out / f"{name}.npz", input0=inputs)
        np.savez(args.out / f"{name}.ref.npz", output0=ref)
        np.save(args.out / f"{name}.labels.npy", np.argmax(ref.reshape(args.samples, -1), axis=1))
        print(f"{name}: {args.samples} samples, input {list(inputs.shape)}, output {list(ref.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
