#!/usr/bin/env python3
"""ResNet-50 (He et al. 2016, torchvision's layout: bottleneck blocks [3, 4, 6, 3], stride on the
3×3 convolution), random weights from seed 0 and batch-norm statistics drawn away from the
identity, in inference mode — written out here so no download is needed, exported to ONNX
(opset 17) with a symbolic batch dim `batch` by torch's exporter, as a user would export it.

    python3 bench/resnet50.py OUT.onnx     # needs torch (the peers' venv: ../shared/peers/setup.sh --torch)

bench/peers.py (workloads resnet50_b1, resnet50_b32) imports `model()` for torch and
torch.compile, and times the exported file in weft and ONNX Runtime.
"""
import os
import sys


def model():
    import torch
    import torch.nn as nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride, down):
            super().__init__()
            cout = width * 4
            self.c1, self.b1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
            self.c2, self.b2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
            self.c3, self.b3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if down else None)

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = torch.relu(self.b2(self.c2(y)))
            y = self.b3(self.c3(y))
            return torch.relu(y + (self.down(x) if self.down is not None else x))

    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                      nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            layers, cin = [], 64
            for width, n, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
                for i in range(n):
                    layers.append(Bottleneck(cin, width, stride if i == 0 else 1, i == 0))
                    cin = width * 4
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(2048, 1000)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    torch.manual_seed(0)
    m = ResNet50().eval()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.1, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.1, 0.1)
    return m


def export(path):
    import torch
    m = model()
    x = torch.randn(1, 3, 224, 224)
    # A fresh machine has no models folder yet.
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    torch.onnx.export(m, (x,), path, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, dynamo=False)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    export(sys.argv[1])
