"""A module file for ``refsim compile`` (outside the zoo): every layer family the cortex_m
lowering handles, with BatchNorm to fold and ReLU6 to fuse.

    refsim compile examples/compile_example.py:make_model --input-shape 1,3,32,32 \\
        --target cortex-m55 --calibration-random 32 -o /tmp/example.pte
    refsim run /tmp/example.pte

conv 3×3 + BN + ReLU6 → depthwise 3×3 + BN + ReLU6 → pointwise 1×1 + BN, added to a 1×1
projection of the block input (residual add) + ReLU → max pool 2×2 → conv 3×3 + BN + ReLU6 →
average pool 16×16 → flatten → linear 10 → softmax.
"""

from __future__ import annotations

import torch
from torch import nn


class ExampleNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU6())
        self.depthwise = nn.Sequential(
            nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False), nn.BatchNorm2d(16), nn.ReLU6()
        )
        self.pointwise = nn.Sequential(nn.Conv2d(16, 24, 1, bias=False), nn.BatchNorm2d(24))
        self.project = nn.Conv2d(16, 24, 1)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Sequential(nn.Conv2d(24, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU6())
        self.avg = nn.AvgPool2d(16)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = torch.relu(self.pointwise(self.depthwise(x)) + self.project(x))
        x = self.head(self.pool(x))
        x = torch.flatten(self.avg(x), 1)
        return torch.softmax(self.fc(x), dim=-1)


def make_model() -> nn.Module:
    """Seeded weights; BatchNorm statistics from one pass over seeded random inputs."""
    torch.manual_seed(7)
    model = ExampleNet()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = None
            nn.init.uniform_(m.weight, 0.75, 1.25)
            nn.init.uniform_(m.bias, 0.5, 1.0)
    model.train()
    with torch.no_grad():
        model(torch.rand(32, 3, 32, 32, generator=torch.Generator().manual_seed(8)) * 2 - 1)
    model.fc.weight.data *= 4.0
    return model.eval()
