// RNN / GRU / LSTM kernel (rnn_kernels.h): one block per (direction, batch entry) walks the sequence; the state,
// gate pre-activations and GRU's reset gate live in the caller's scratch (the layer's workspace). Math in double,
// mirroring the CPU reference (src/ops/nn/rnn/rnn.cc).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "ops/nn/rnn/cuda/rnn_kernels.h"

namespace kilnrt::cuda::kernels {
namespace {

constexpr int kRnnThreads = 256;

__device__ double rnn_act(int code, double a, double b, double x) {
  switch (code) {
    case 0: return tanh(x);
    case 1: return 1.0 / (1.0 + exp(-x));
    case 2: return x > 0 ? x : 0.0;
    case 3: return a * x + b;
    case 4: return x >= 0 ? x : a * x;
    case 5: return x > a ? x : 0.0;
    case 6: return a * tanh(b * x);
    case 7: {
      const double v = a * x + b;
      return v < 0 ? 0.0 : (v > 1 ? 1.0 : v);
    }
    case 8: return x >= 0 ? x : a * (exp(x) - 1);
    case 9: return x / (1 + fabs(x));
    default: return log1p(exp(x));
  }
}

__global__ void rnn_kernel(RnnTensors q, RnnPlan p) {
  const int64_t d = blockIdx.x / p.batch, b = blockIdx.x % p.batch;
  const int64_t H = p.hidden, G = p.gates, I = p.in, GH = G * H;
  double* h = q.scratch + int64_t(blockIdx.x) * (4 + 2 * G) * H;  // rnn_scratch_per_block
  double *c = h + H, *hn = c + H, *rr = hn + H, *gx = rr + H, *gh = gx + GH;
  const bool rev = p.reverse_only || d == 1;
  const float* w = q.w + d * GH * I;
  const float* r = q.r + d * GH * H;
  const float* wb = q.b ? q.b + d * 2 * GH : nullptr;
  const float* rb = wb ? wb + GH : nullptr;
  const float* pp = q.p ? q.p + d * 3 * H : nullptr;
  const int n_acts = p.kind + 1;
  const int* act = p.act + d * n_acts;
  const double* al = p.alpha + d * n_acts;
  const double* be = p.beta + d * n_acts;
  auto A = [&](int k, double v) { return rnn_act(act[k], al[k], be[k], v); };
  auto cl = [&](double v) { return p.has_clip ? fmax(-p.clip, fmin(p.clip, v)) : v; };
  auto si = [&](int64_t j) { return p.batch_first ? (b * p.dirs + d) * H + j : (d * p.batch + b) * H + j; };
  auto yi = [&](int64_t t, int64_t j) {
    return p.batch_first ? ((b * p.seq + t) * p.dirs + d) * H + j : ((t * p.dirs + d) * p.batch + b) * H + j;
  };
  int64_t len = p.seq;
  if (q.lens) {
    const int64_t l = p.lens_64 ? static_cast<const int64_t*>(q.lens)[b] : static_cast<const int32_t*>(q.lens)[b];
    len = l < len ? l : len;
  }
  if (len < 0) len = 0;
  for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
    h[j] = q.h0 ? q.h0[si(j)] : 0.0;
    c[j] = q.c0 ? q.c0[si(j)] : 0.0;
    if (q.y)
      for (int64_t t = len; t < p.seq; ++t) q.y[yi(t, j)] = 0.f;
  }
  __syncthreads();
  for (int64_t step = 0; step < len; ++step) {
    const int64_t t = rev ? len - 1 - step : step;
    const float* x = q.x + (p.batch_first ? (b * p.seq + t) * I : (t * p.batch + b) * I);
    for (int64_t g = threadIdx.x; g < GH; g += blockDim.x) {
      double sx = wb ? wb[g] : 0.0, sh = rb ? rb[g] : 0.0;
      for (int64_t k = 0; k < I; ++k) sx += double(w[g * I + k]) * double(x[k]);
      for (int64_t k = 0; k < H; ++k) sh += double(r[g * H + k]) * h[k];
      gx[g] = sx;
      gh[g] = sh;
    }
    __syncthreads();
    if (p.kind == 1) {
      for (int64_t j = threadIdx.x; j < H; j += blockDim.x) rr[j] = A(0, cl(gx[H + j] + gh[H + j]));
      __syncthreads();
    }
    for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
      if (p.kind == 0) {
        hn[j] = A(0, cl(gx[j] + gh[j]));
      } else if (p.kind == 1) {
        const double z = A(0, cl(gx[j] + gh[j]));
        double pre;
        if (p.lbr) {
          pre = gx[2 * H + j] + rr[j] * gh[2 * H + j];
        } else {
          double s = rb ? rb[2 * H + j] : 0.0;
          for (int64_t k = 0; k < H; ++k) s += double(r[(2 * H + j) * H + k]) * rr[k] * h[k];
          pre = gx[2 * H + j] + s;
        }
        hn[j] = (1 - z) * A(1, cl(pre)) + z * h[j];
      } else {
        const double cp = c[j];
        const double pi = pp ? pp[j] : 0.0, po = pp ? pp[H + j] : 0.0, pf = pp ? pp[2 * H + j] : 0.0;
        const double i_ = A(0, cl(gx[j] + gh[j] + pi * cp));
        double f_ = A(0, cl(gx[2 * H + j] + gh[2 * H + j] + pf * cp));
        if (p.input_forget) f_ = 1 - i_;
        const double cc = A(1, cl(gx[3 * H + j] + gh[3 * H + j]));
        const double cn = f_ * cp + i_ * cc;
        const double o_ = A(0, cl(gx[H + j] + gh[H + j] + po * cn));
        c[j] = cn;
        hn[j] = o_ * A(2, cn);
      }
    }
    __syncthreads();
    for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
      h[j] = hn[j];
      if (q.y) q.y[yi(t, j)] = static_cast<float>(hn[j]);
    }
    __syncthreads();
  }
  for (int64_t j = threadIdx.x; j < H; j += blockDim.x) {
    if (q.yh) q.yh[si(j)] = static_cast<float>(h[j]);
    if (q.yc) q.yc[si(j)] = static_cast<float>(c[j]);
  }
}

}  // namespace

int rnn_f32(const RnnTensors& t, const RnnPlan& p, StreamT stream) {
  const int64_t blocks = int64_t(p.dirs) * p.batch;
  if (blocks <= 0 || p.hidden <= 0) return 0;
  if (blocks > 0x7fffffffLL) return static_cast<int>(cudaErrorInvalidValue);
  rnn_kernel<<<static_cast<unsigned>(blocks), kRnnThreads, 0, stream>>>(t, p);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace kilnrt::cuda::kernels
