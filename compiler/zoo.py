"""The MLPerf Tiny models (REFERENCE.md §5) in PyTorch with deterministic weights: ``zoo:kws``,
``zoo:vww``, ``zoo:ic``, ``zoo:ad``.

    from compiler import zoo
    spec = zoo.MODELS["kws"]
    model = zoo.build(spec)                 # seeded weights, data-derived BatchNorm statistics
    samples = zoo.calibration(spec)         # 16 seeded inputs uniform in [-1, 1)

These are the definitions examples/models/make_models.py exports with ExecuTorch's own flow
(the bundled programs), so ``refsim compile zoo:NAME`` and the bundled ``NAME.pte`` start from
the same module, weights and calibration data. ``build(spec, channels_last=False)`` gives the
contiguous module refsim's compiler takes (its output layout is its own business); ExecuTorch's
legacy cortex_m flow wants the channels-last one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

SEED = 20240611
CALIBRATION_SAMPLES = 16
#: Mean of the BatchNorm shifts β. 0.75 keeps about three quarters of every ReLU active; with
#: the 0.1 of the bundled programs (examples/models, ``bn_beta=0.1``) these random-weight
#: networks are chaotic: a perturbation grows ~1.3 dB per layer, so int8 noise alone takes
#: VWW's output to ~13 dB SNR under ExecuTorch's flow and ours alike (docs/compiler.md).
BN_BETA = 0.75

# --- the MLPerf Tiny architectures (REFERENCE.md §5) -----------------------------------------


def conv_bn_relu(c_in: int, c_out: int, kernel, stride=1, padding=0, groups: int = 1) -> list[nn.Module]:
    return [
        nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=padding, groups=groups, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(),
    ]


class KwsDsCnn(nn.Module):
    """KWS DS-CNN: input 49×10×1 (MFCC frames × coefficients).

    conv 64 10×4 stride 2 + BN + ReLU (TensorFlow SAME: output 25×5, padding 4 top / 5 bottom,
    1 left / 1 right, written as an explicit zero pad since PyTorch pads symmetrically);
    4 × (depthwise 3×3 + BN + ReLU, pointwise 64 + BN + ReLU); average pool 24×5 (the
    reference's ``(int(49 / 2), int(10 / 2))`` over the 25×5 map); FC 12; softmax.
    """

    def __init__(self) -> None:
        super().__init__()
        layers = conv_bn_relu(1, 64, (10, 4), stride=2)
        for _ in range(4):
            layers += conv_bn_relu(64, 64, 3, padding=1, groups=64)
            layers += conv_bn_relu(64, 64, 1)
        self.features = nn.Sequential(*layers)
        self.pool = nn.AvgPool2d((24, 5), count_include_pad=False)
        self.fc = nn.Linear(64, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.pad(x, (1, 1, 4, 5))  # TensorFlow SAME for 49×10, kernel 10×4, stride 2
        x = self.features(x)
        x = torch.flatten(self.pool(x), 1)
        return torch.softmax(self.fc(x), dim=-1)


class VwwMobileNetV1(nn.Module):
    """VWW MobileNetV1 α=0.25: input 96×96×3, 2 classes.

    conv 8 3×3 stride 2; 13 depthwise-separable blocks (depthwise 3×3 + BN + ReLU, pointwise
    + BN + ReLU) with outputs 16, 32/2, 32, 64/2, 64, 128/2, 5 × 128, 256/2, 256; average pool
    3×3; FC 2; softmax. Padding 1 on every 3×3 (PyTorch's symmetric padding: same shapes and
    MACs as TensorFlow SAME).
    """

    BLOCKS = ((16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2)) + ((128, 1),) * 5 + ((256, 2), (256, 1))

    def __init__(self) -> None:
        super().__init__()
        layers = conv_bn_relu(3, 8, 3, stride=2, padding=1)
        c = 8
        for c_out, stride in self.BLOCKS:
            layers += conv_bn_relu(c, c, 3, stride=stride, padding=1, groups=c)
            layers += conv_bn_relu(c, c_out, 1)
            c = c_out
        self.features = nn.Sequential(*layers)
        self.pool = nn.AvgPool2d(3, count_include_pad=False)
        self.fc = nn.Linear(256, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.flatten(self.pool(self.features(x)), 1)
        return torch.softmax(self.fc(x), dim=-1)


class ResidualStack(nn.Module):
    """conv 3×3 (stride) + BN + ReLU, conv 3×3 + BN; shortcut: identity, or a 1×1 projection
    with the same stride when the shape changes; add; ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            *conv_bn_relu(c_in, c_out, 3, stride=stride, padding=1),
            nn.Conv2d(c_out, c_out, 3, padding=1, bias=False),
            nn.BatchNorm2d(c_out),
        )
        self.shortcut = nn.Conv2d(c_in, c_out, 1, stride=stride) if stride != 1 or c_in != c_out else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = x if self.shortcut is None else self.shortcut(x)
        return torch.relu(self.body(x) + skip)


class IcResNet8(nn.Module):
    """IC ResNet-8: input 32×32×3; conv 16 + BN + ReLU; residual stacks 16, 32/2, 64/2 (1×1
    projection shortcuts where the shape changes, identity in the first); average pool 8×8;
    FC 10; softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(*conv_bn_relu(3, 16, 3, padding=1))
        self.stacks = nn.Sequential(
            ResidualStack(16, 16, 1), ResidualStack(16, 32, 2), ResidualStack(32, 64, 2)
        )
        self.pool = nn.AvgPool2d(8, count_include_pad=False)
        self.fc = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.flatten(self.pool(self.stacks(self.stem(x))), 1)
        return torch.softmax(self.fc(x), dim=-1)


class AdAutoencoder(nn.Module):
    """AD deep autoencoder: 640 → 4 × FC128 → FC8 → 4 × FC128 → FC640, BN + ReLU after every
    layer but the last."""

    def __init__(self) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = 640
        for out in (128, 128, 128, 128, 8, 128, 128, 128, 128):
            layers += [nn.Linear(width, out), nn.BatchNorm1d(out), nn.ReLU()]
            width = out
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(width, 640)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.body(x))


@dataclass(frozen=True)
class Spec:
    name: str
    make: Callable[[], nn.Module]
    shape: tuple[int, ...]
    title: str

    @property
    def image(self) -> bool:
        return len(self.shape) == 4


MODELS = {
    "kws": Spec("kws", KwsDsCnn, (1, 1, 49, 10), "KWS DS-CNN"),
    "vww": Spec("vww", VwwMobileNetV1, (1, 3, 96, 96), "VWW MobileNetV1 α=0.25"),
    "ic": Spec("ic", IcResNet8, (1, 3, 32, 32), "IC ResNet-8"),
    "ad": Spec("ad", AdAutoencoder, (1, 640), "AD deep autoencoder"),
}


# --- deterministic weights and data ------------------------------------------------------------


def sample(
    spec: Spec, generator: torch.Generator, batch: int = 1, channels_last: bool = True
) -> torch.Tensor:
    """Uniform in [-1, 1), channels-last for images unless told otherwise (what the legacy
    cortex_m layout of ExecuTorch wants; the values do not depend on it)."""
    x = torch.rand((batch, *spec.shape[1:]), generator=generator) * 2 - 1
    return x.to(memory_format=torch.channels_last) if spec.image and channels_last else x


def build(spec: Spec, channels_last: bool = True, bn_beta: float = BN_BETA) -> nn.Module:
    """The model with seeded weights and data-derived BatchNorm statistics.

    Weights keep PyTorch's default (Kaiming-uniform) init from a fixed seed. BN's affine
    parameters are drawn around (γ≈1, β≈``bn_beta``), then its running statistics are set to the
    batch statistics of a random input batch (one pass in training mode with cumulative
    averaging), so every BN output is roughly N(β, γ²) and most of each ReLU fires: no layer
    is dead or saturated, as in a trained network. The classifier is scaled so the softmax is
    not flat.
    """
    torch.manual_seed(SEED)
    model = spec.make()
    generator = torch.Generator().manual_seed(SEED + 1)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm1d | nn.BatchNorm2d):
            n = module.num_features
            module.weight.data = 0.75 + 0.5 * torch.rand(n, generator=generator)
            module.bias.data = bn_beta + 0.2 * (torch.rand(n, generator=generator) - 0.5)
            module.momentum = None  # cumulative average over the statistics pass
            module.reset_running_stats()
    model.train()
    with torch.no_grad():
        model(sample(spec, generator, batch=64))
    if hasattr(model, "fc"):
        model.fc.weight.data *= 4.0
    model.eval()
    return model.to(memory_format=torch.channels_last) if spec.image and channels_last else model


def calibration(
    spec: Spec, count: int = CALIBRATION_SAMPLES, channels_last: bool = True
) -> list[torch.Tensor]:
    """The seeded calibration inputs (the first ``count`` are the same whatever ``count``)."""
    generator = torch.Generator().manual_seed(SEED + 2)
    return [sample(spec, generator, channels_last=channels_last) for _ in range(count)]


def evaluation_input(spec: Spec, channels_last: bool = True) -> torch.Tensor:
    return sample(spec, torch.Generator().manual_seed(SEED + 3), channels_last=channels_last)


def evaluation_set(spec: Spec, count: int = 256) -> torch.Tensor:
    """``count`` inputs drawn like the calibration data but from another seed, one batch (NCHW)."""
    return sample(spec, torch.Generator().manual_seed(SEED + 4), batch=count, channels_last=False)
