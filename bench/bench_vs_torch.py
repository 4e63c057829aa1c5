"""kilnrt vs PyTorch on the GPU, in one process per run (DESIGN.md, performance method).

For each model: export to ONNX with torch's default exporter (dynamic batch), build kilnrt CUDA engines (one dynamic
engine per precision: batch 1..32), then time, with CUDA events, the median of >= 100 enqueue-to-completion runs with
inputs already on the device, after warm-up:
  kilnrt (engine(x, out=y) on torch's current stream; CUDA graphs are kilnrt's default),
  torch eager and torch CUDA graph (channels_last for CNNs), fp32 with TF32 off, and fp16 (autocast-free .half()).
Accuracy of each kilnrt engine against torch fp32 (mean-centred cosine, max abs err / std) is reported too.
Usage (GPU box): PYTHONPATH=build-gpu/python python3 bench/bench_vs_torch.py [--models a,b] [--out table.md]
"""
import argparse
import copy
import os
import tempfile
import time

import numpy as np
import torch

import kilnrt


def zoo():
    import torchvision
    tv = torchvision.models
    return {
        "resnet50": (lambda: tv.resnet50(weights=None), (3, 224, 224), True),
        "mobilenet_v3_large": (lambda: tv.mobilenet_v3_large(weights=None), (3, 224, 224), True),
        "efficientnet_b0": (lambda: tv.efficientnet_b0(weights=None), (3, 224, 224), True),
        "convnext_tiny": (lambda: tv.convnext_tiny(weights=None), (3, 224, 224), True),
        "vit_b_16": (lambda: tv.vit_b_16(weights=None), (3, 224, 224), False),
        "mobilenet_v3_small": (lambda: tv.mobilenet_v3_small(weights=None), (3, 224, 224), True),
    }


def recalibrate(model, shape):
    # Zero-initialised classifier heads (torchvision's ViT) would make every output 0: give them random weights.
    for m in model.modules():
        if isinstance(m, torch.nn.Linear) and float(m.weight.abs().max()) == 0.0:
            torch.nn.init.normal_(m.weight, std=0.02)
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(8, *shape, device="cuda"))
    model.eval()


def gpu_time(fn, iters=100, warmup=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return float(np.median(times))


def torch_graph(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def accuracy(got, ref):
    a = got.double().flatten() - got.double().mean()
    b = ref.double().flatten() - ref.double().mean()
    cos = float((a @ b) / (a.norm() * b.norm() + 1e-300))
    err = float((got.double() - ref.double()).abs().max() / (ref.double().std() + 1e-300))
    return cos, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="mobilenet_v3_small,resnet50,mobilenet_v3_large,efficientnet_b0,convnext_tiny,vit_b_16")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    tmp = tempfile.mkdtemp()
    models = zoo()
    rows = ["| model | batch | prec | kilnrt ms | torch eager ms | torch graph ms | kilnrt / best torch | cosine | max err/std | build s |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for name in args.models.split(","):
        make, shape, cnn = models[name]
        model = make().cuda()
        recalibrate(model, shape)
        onnx_path = os.path.join(tmp, name + ".onnx")
        try:
            torch.onnx.export(model, (torch.randn(2, *shape, device="cuda"),), onnx_path, input_names=["x"],
                              output_names=["y"], dynamo=True,
                              dynamic_shapes={"x": {0: torch.export.Dim("batch", min=1, max=64)}})
        except Exception as e:  # noqa: BLE001 - reported in the table
            rows.append(f"| {name} | - | - | export failed: {type(e).__name__} | | | | | | |")
            continue
        for prec in ("fp32", "fp16"):
            eng_path = os.path.join(tmp, f"{name}.{prec}.engine")
            t0 = time.perf_counter()
            try:
                kilnrt.build(onnx_path, eng_path, device="cuda", fp16=(prec == "fp16"),
                             shapes={"x": ((1,) + shape, (8,) + shape, (32,) + shape)})
                engine = kilnrt.Engine(eng_path)
            except kilnrt.Error as e:
                rows.append(f"| {name} | - | {prec} | build failed: {str(e).splitlines()[0][:120]} | | | | | | |")
                continue
            build_s = time.perf_counter() - t0
            # The torch model timed against kilnrt: same precision, channels_last for CNNs. `model` stays the fp32
            # NCHW reference.
            tm = copy.deepcopy(model)
            tm = tm.half() if prec == "fp16" else tm
            if cnn:
                tm = tm.to(memory_format=torch.channels_last)
            for b in [int(x) for x in args.batches.split(",")]:
                x = torch.randn(b, *shape, device="cuda")
                with torch.no_grad():
                    ref = model(x)
                    xt = x.half() if prec == "fp16" else x
                    if cnn:
                        xt = xt.contiguous(memory_format=torch.channels_last)
                    y = engine(x)
                    cos, err = accuracy(y.float(), ref)
                    out = torch.empty_like(y)
                    k = gpu_time(lambda: engine(x, out=out))
                    e = gpu_time(lambda: tm(xt))
                    try:
                        g = gpu_time(torch_graph(lambda: tm(xt)))
                    except Exception:  # noqa: BLE001
                        g = float("nan")
                best = min(e, g) if g == g else e
                rows.append(f"| {name} | {b} | {prec} | {k:.3f} | {e:.3f} | {g:.3f} | {k / best:.2f} | {cos:.6f} | "
                            f"{err:.2e} | {build_s:.1f} |")
                print(rows[-1], flush=True)
            del tm
        del model
        torch.cuda.empty_cache()
    table = "\n".join(rows)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, kilnrt {kilnrt.__version__}; "
                    "one dynamic engine (batch 1..32) per model and precision\n\n" + table + "\n")


if __name__ == "__main__":
    main()
