"""CUDA against CPU on a GPU box: the vertical-slice models (torchvision resnet18, mobilenet_v3_small and a
torch.nn.TransformerEncoderLayer, random weights) exported by BOTH of torch's exporters (TorchScript: dynamo=False;
dynamo=True), built as float32 CPU and CUDA engines with a dynamic batch; CUDA outputs must match the CPU backend
(max abs err <= 1e-4 x max|ref|, mean-centred cosine >= 0.99999) at batch 1 and 4. Exits 1 on any mismatch.
Usage: PYTHONPATH=build-gpu/python python3 scripts/gpu_slice_check.py
"""
import os
import sys
import tempfile

import numpy as np
import torch
import torchvision

import kilnrt


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                                      batch_first=True)

    def forward(self, x):
        return self.layer(x)


def metrics(got, want):
    err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    a, b = got.ravel() - got.mean(), want.ravel() - want.mean()
    return err, float(a @ b / np.sqrt((a @ a) * (b @ b)))


def main():
    torch.manual_seed(0)
    tmp = tempfile.mkdtemp()
    models = {"resnet18": (torchvision.models.resnet18(weights=None), (3, 64, 64)),
              "mobilenet_v3_small": (torchvision.models.mobilenet_v3_small(weights=None), (3, 224, 224)),
              "transformer_encoder_layer": (Encoder(), (16, 64))}
    failed = 0
    for name, (model, shape) in models.items():
        model.train()
        with torch.no_grad():
            for _ in range(3):
                model(torch.randn(8, *shape))
        model.eval()
        for dynamo in (False, True):
            path = os.path.join(tmp, f"{name}.{'dynamo' if dynamo else 'torchscript'}.onnx")
            x2 = torch.randn(2, *shape)
            kw = dict(dynamo=True, dynamic_shapes={"x": {0: torch.export.Dim("batch", min=1, max=64)}}) if dynamo \
                else dict(dynamo=False, opset_version=17, dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
            # Exported with autograd on: in no_grad eval mode torch's encoder layer takes a fused fast path that the
            # TorchScript exporter cannot export.
            torch.onnx.export(model, (x2,), path, input_names=["x"], output_names=["y"], **kw)
            engines = {}
            for dev in ("cpu", "cuda"):
                kilnrt.build(path, path + "." + dev, device=dev)
                engines[dev] = kilnrt.Engine(path + "." + dev)
            placements = {layer["placement"] for layer in engines["cuda"].layers}
            for b in (1, 4):
                x = np.random.RandomState(b).standard_normal((b,) + shape).astype(np.float32)
                ref = engines["cpu"](x)
                got = engines["cuda"](x)
                with torch.no_grad():
                    tref = model(torch.from_numpy(x)).numpy()
                err, cos = metrics(got, ref)
                terr, tcos = metrics(got, tref)
                ok = err <= 1e-4 and cos >= 0.99999
                failed += not ok
                print(f"{name:26s} {'dynamo' if dynamo else 'torchscript':11s} batch {b}: cuda vs cpu rel err {err:.2e} "
                      f"cos {cos:.9f}; vs torch rel err {terr:.2e} cos {tcos:.9f}; placements {sorted(placements)} "
                      f"{'OK' if ok else 'MISMATCH'}", flush=True)
    print("slice check:", "FAILED" if failed else "all OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
