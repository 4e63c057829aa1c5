"""Numerics of the float16 softmax exponents (CPU only, numpy).

The short / wgmma attention kernels compute p = 2^(v - max) in float32 (ex2.approx.f32) and round p to float16
for the P V product. With KILNRT_ATTENTION_HALF_EXP=1 (off by default: slower on an H100, 2026-11-23,
bench/results/attention_half_exp_io16_h100_2026-11-23.md) they round the argument to float16 and take
ex2.approx.f16x2 (maximum relative error 2^-9.9 per the PTX ISA), two scores per instruction.
This script emulates both on random attention rows (S = 128, D = 64, q scaled up to 8x for sharp softmaxes) and
prints the largest |O - float64 reference|, O rounded to float16 as the kernels store it, against the CUDA attention
tests' absolute tolerance (6 float16 units). Usage: python3 bench/attention_half_exp_sim.py
"""
import numpy as np
rng = np.random.default_rng(0)
u = 2.0**-11
def run(S=128, D=64, scale_q=1.0, trials=20, err=2**-9.9):
    worst_old = worst_new = 0.0
    for t in range(trials):
        q = rng.uniform(-1, 1, (S, D)) * scale_q; k = rng.uniform(-1, 1, (S, D)); v = rng.uniform(-1, 1, (S, D))
        q, k, v = [x.astype(np.float16).astype(np.float64) for x in (q, k, v)]
        s = (q @ k.T) / np.sqrt(D) * np.log2(np.e)        # log2 domain
        m = s.max(1, keepdims=True)
        ref = np.exp2(s - m); ref = (ref / ref.sum(1, keepdims=True)) @ v
        x = (s.astype(np.float32) - m.astype(np.float32))
        # float32 exponents: ex2 (MUFU ~2 ulp f32), P rounded to fp16, fp32 row sums of the fp32 values
        p32 = np.exp2(x.astype(np.float64)).astype(np.float32)
        p16 = p32.astype(np.float16).astype(np.float64)
        o_old = (p16 @ v) / p32.astype(np.float64).sum(1, keepdims=True)
        # f16x2 exponents: argument rounded to fp16, ex2 with relative error up to err, result rounded to fp16;
        # sums of fp16 pairs
        xa = x.astype(np.float16).astype(np.float64)
        pn = np.exp2(xa) * (1 + rng.uniform(-err, err, xa.shape))
        pn = pn.astype(np.float16).astype(np.float64)
        o_new = (pn @ v) / pn.sum(1, keepdims=True)
        o_old = o_old.astype(np.float16).astype(np.float64); o_new = o_new.astype(np.float16).astype(np.float64)
        worst_old = max(worst_old, np.abs(o_old - ref).max()); worst_new = max(worst_new, np.abs(o_new - ref).max())
    return worst_old, worst_new
for sq in (1.0, 4.0, 8.0):
    o, n = run(scale_q=sq)
    print("q scale %.0f: max |O - f64| f32 exp %.2e f16x2 exp %.2e (test atol 6u = %.2e)" % (sq, o, n, 6 * u))
