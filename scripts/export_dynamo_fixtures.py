"""Export the committed torch 2.x (dynamo exporter) fixtures.

Run on a machine with torch >= 2.5 and onnxscript (the GPU machine has torch 2.11):
    python3 scripts/export_dynamo_fixtures.py OUT_DIR [MODEL ...]     (default: every model)
Each model gets MODEL.onnx (dynamic batch), MODEL.input.npy (batch 2) and MODEL.expected.npy (torch fp32 on CPU).
Weights are random (fixed seed); BatchNorm statistics are recalibrated with a few train-mode passes so activations
look like a trained network's.
"""
import os
import sys

import numpy as np
import torch
import torchvision


def recalibrate(model, shape, steps=4):
    model.train()
    with torch.no_grad():
        for _ in range(steps):
            model(torch.randn(*shape))
    model.eval()


def export(model, example, path, batch_dim_name="batch"):
    dyn = {"x": {0: torch.export.Dim(batch_dim_name, min=1, max=1024)}}
    prog = torch.onnx.export(model, (example,), path, input_names=["x"], output_names=["y"],
                             dynamo=True, dynamic_shapes=dyn, external_data=False)
    return prog


class EncoderLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                                      dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def vit_tiny():
    """torchvision's VisionTransformer at a small size: 32 x 32 images, 8 x 8 patches (16 tokens + the class token),
    2 layers, width 64, 2 heads; the classifier reads the class token (the Gather that passes/hoist_gather moves up).
    The zero-initialised head gets random weights so the outputs depend on the input."""
    from torchvision.models.vision_transformer import VisionTransformer
    with torch.random.fork_rng():  # the other fixtures' random streams stay as they were
        torch.manual_seed(1)
        m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=64, mlp_dim=128,
                              num_classes=10)
        for p in m.heads.parameters():
            torch.nn.init.normal_(p, std=0.1)
    return m


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    models = {
        "mobilenet_v3_small": (torchvision.models.mobilenet_v3_small(weights=None), (2, 3, 224, 224)),
        "transformer_encoder_layer": (EncoderLayer(), (2, 16, 64)),
        "vit_tiny": (vit_tiny(), (2, 3, 32, 32)),
    }
    wanted = sys.argv[2:] or list(models)
    for name, (model, shape) in models.items():
        if name not in wanted:
            continue
        if name == "mobilenet_v3_small":
            recalibrate(model, (8,) + shape[1:])
        model.eval()
        x = torch.randn(*shape)
        with torch.no_grad():
            y = model(x)
        path = os.path.join(out, name + ".onnx")
        export(model, x, path)
        np.save(os.path.join(out, name + ".input.npy"), x.numpy())
        np.save(os.path.join(out, name + ".expected.npy"), y.numpy())
        print(name, "->", path, os.path.getsize(path), "bytes", "out", tuple(y.shape))
    print("torch", torch.__version__)


if __name__ == "__main__":
    main()
