"""The library floor of a model on the GPU (docs/architecture.md, performance method): every heavy layer alone on
its best library kernel, summed.

Heavy layers: nn.Conv2d (cuDNN, channels_last, torch.backends.cudnn.benchmark on so that cuDNN times its
algorithms), nn.Linear (cuBLAS / cuBLASLt), nn.MultiheadAttention (its packed in-projection GEMM, the attention core
through F.scaled_dot_product_attention, its out-projection GEMM) and any other F.scaled_dot_product_attention call
(BERT's attention core, with its mask). Everything else (norms, activations, pools, copies) counts zero: the floor is
what an engine could not go below without beating the libraries on the heavy layers themselves.

One forward pass of the model records the heavy calls with their shapes; each distinct call is then timed in the
benchmark's precision: 20 calls captured in one CUDA graph, replayed 10 times, the fastest replay / 20 (launch
overhead amortised, as an engine's graph replay would). The floor is the sum over calls, counting repeats.

Used by bench/bench_vs_torch.py (column "floor ms" and "% of floor" = floor / kilnrt time), which runs it in a child
process (floors_in_child); standalone:
  python3 bench/library_floor.py --models resnet50,bert --batches 1,32 [--precision fp16]
"""
import argparse
import collections
import contextlib
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graph_streams  # noqa: E402
import zoo_models  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


@contextlib.contextmanager
def _recording(model):
    """Records (kind, params) of every heavy call of one forward pass of `model` into the yielded list."""
    calls = []
    depth = {"mha": 0}
    hooks = []
    wrapped = []  # MultiheadAttention modules whose forward is wrapped (called with keywords: no pre-hook)

    def conv_hook(m, inputs):
        if depth["mha"] == 0:
            calls.append(("conv", m, tuple(inputs[0].shape)))

    def linear_hook(m, inputs):
        if depth["mha"] == 0:
            calls.append(("linear", m, tuple(inputs[0].shape)))

    def wrap_mha(m):
        orig = m.forward

        def forward(*args, **kwargs):
            if depth["mha"] == 0:
                q = args[0] if args else kwargs["query"]
                b, s, e = (q.shape if m.batch_first else (q.shape[1], q.shape[0], q.shape[2]))
                calls.append(("gemm", None, (b * s, e, 3 * e)))                      # packed q/k/v projection
                calls.append(("sdpa", None, ((b, m.num_heads, s, e // m.num_heads), None)))
                calls.append(("gemm", None, (b * s, e, e)))                          # out projection
            depth["mha"] += 1
            try:
                return orig(*args, **kwargs)
            finally:
                depth["mha"] -= 1
        m.forward = forward
        wrapped.append(m)

    for mod in model.modules():
        if isinstance(mod, torch.nn.Conv2d):
            hooks.append(mod.register_forward_pre_hook(conv_hook))
        elif isinstance(mod, torch.nn.Linear):
            hooks.append(mod.register_forward_pre_hook(linear_hook))
        elif isinstance(mod, torch.nn.MultiheadAttention):
            wrap_mha(mod)
    real_sdpa = getattr(F, "scaled_dot_product_attention", None)

    def sdpa(q, k, v, attn_mask=None, *a, **kw):
        if depth["mha"] == 0:
            calls.append(("sdpa", None, (tuple(q.shape), None if attn_mask is None else
                                         (tuple(attn_mask.shape), attn_mask.dtype))))
        return real_sdpa(q, k, v, attn_mask, *a, **kw)
    if real_sdpa is not None:
        F.scaled_dot_product_attention = sdpa
    try:
        yield calls
    finally:
        if real_sdpa is not None:
            F.scaled_dot_product_attention = real_sdpa
        for h in hooks:
            h.remove()
        for m in wrapped:
            del m.forward


_floor_stream = None


def _graph_time(fn, reps=20, replays=10):
    """ms per call of fn: `reps` calls in one CUDA graph, fastest of `replays` replays / reps."""
    global _floor_stream
    if _floor_stream is None:  # one stream for every floor graph: each is destroyed before the next is captured
        _floor_stream = graph_streams.own_stream()
    g = graph_streams.capture(lambda: [fn() for _ in range(reps)], _floor_stream, warmup=1)
    g.replay()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        best = min(best, a.elapsed_time(b))
    return best / reps


def _call_fn(kind, module, params, dtype):
    """A no-argument function running one heavy call on fresh random operands."""
    dev = "cuda"
    if kind == "conv":
        m = torch.nn.Conv2d(module.in_channels, module.out_channels, module.kernel_size, module.stride,
                            module.padding, module.dilation, module.groups, module.bias is not None,
                            module.padding_mode).to(dev, dtype)
        fmt = torch.channels_last if dtype != torch.float32 else torch.contiguous_format
        m = m.to(memory_format=fmt)
        x = torch.randn(params, device=dev, dtype=dtype).contiguous(memory_format=fmt)
        return lambda: m(x)
    if kind == "linear":
        w = torch.randn(module.out_features, module.in_features, device=dev, dtype=dtype)
        bias = None if module.bias is None else torch.randn(module.out_features, device=dev, dtype=dtype)
        x = torch.randn(params, device=dev, dtype=dtype)
        return lambda: F.linear(x, w, bias)
    if kind == "gemm":
        m_, k_, n_ = params
        x = torch.randn(m_, k_, device=dev, dtype=dtype)
        w = torch.randn(n_, k_, device=dev, dtype=dtype)
        bias = torch.randn(n_, device=dev, dtype=dtype)
        return lambda: F.linear(x, w, bias)
    if kind == "sdpa":
        shape, mask = params
        q, k, v = (torch.randn(shape, device=dev, dtype=dtype) for _ in range(3))
        m = None
        if mask is not None:
            mshape, mdtype = mask
            m = (torch.rand(mshape, device=dev) > 0.1) if mdtype == torch.bool else \
                torch.zeros(mshape, device=dev, dtype=dtype)
        return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    raise ValueError(kind)


def _key(kind, module, params):
    if kind == "conv":
        return (kind, module.in_channels, module.out_channels, module.kernel_size, module.stride, module.padding,
                module.dilation, module.groups, module.bias is not None, params)
    if kind == "linear":
        return (kind, module.in_features, module.out_features, module.bias is not None, params)
    return (kind, params)


def library_floor(model, inputs, precision="fp16"):
    """(floor ms, {kind: ms}) of `model` (fp32 module, any device) on `inputs` (its example inputs) in `precision`."""
    dtype = DTYPES[precision]
    with torch.no_grad(), _recording(model) as calls:
        model(*inputs)
    counts = collections.Counter()
    first = {}
    for kind, module, params in calls:
        key = _key(kind, module, params)
        counts[key] += 1
        first.setdefault(key, (kind, module, params))
    old_bench = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    by_kind = collections.Counter()
    try:
        with torch.no_grad():
            for key, n in counts.items():
                kind, module, params = first[key]
                by_kind[kind] += n * _graph_time(_call_fn(kind, module, params, dtype))
    finally:
        torch.backends.cudnn.benchmark = old_bench
    torch.cuda.empty_cache()
    return sum(by_kind.values()), dict(by_kind)


def floors_in_child(model_name, batches, precision="fp16", attn=None, timeout=900):
    """{batch: (floor ms, {kind: ms})} of zoo model `model_name`, measured by this script in a new Python process.

    bench_vs_torch.py uses this to keep the floor's library state (cuDNN benchmark-mode choices, dozens of captured
    and destroyed CUDA graphs, the caching allocator's segments) out of the timed process. That state was a suspect
    for a CUDA_ERROR_LAUNCH_FAILED at b32 next to torch.compile; the cause was the cuBLAS workspace of torch's graphs
    (bench/graph_streams.py)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--models", model_name, "--batches",
           ",".join(str(b) for b in batches), "--precision", precision, "--json"]
    if attn:
        cmd += ["--attn", attn]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError("library floor child process exited %d: %s" % (proc.returncode, tail[:200]))
    return {int(b): (v[0], v[1]) for b, v in json.loads(lines[-1]).items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet50,bert,vit_b_16,mobilenet_v3_large,efficientnet_b0,convnext_tiny")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--precision", default="fp16", choices=sorted(DTYPES))
    ap.add_argument("--attn", default=None, help="BERT's attention implementation (sdpa, eager)")
    ap.add_argument("--json", action="store_true",
                    help="one JSON line per model instead of text: {batch: [floor ms, {kind: ms}]}")
    args = ap.parse_args()
    zoo_models.reference_settings()
    for spec in zoo_models.select(args.models):
        if args.attn:
            spec.attn = args.attn
        model = spec.make()
        found = {}
        for b in [int(x) for x in args.batches.split(",")]:
            floor, parts = library_floor(model, spec.inputs(b, seed=b), args.precision)
            found[b] = [floor, parts]
            if not args.json:
                print("%-20s b%-3d %s floor %.3f ms  (%s)" % (spec.name, b, args.precision, floor, ", ".join(
                    "%s %.3f" % kv for kv in sorted(parts.items()))), flush=True)
        if args.json:
            print(json.dumps(found), flush=True)
        del model
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
