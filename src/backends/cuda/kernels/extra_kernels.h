// Host entry points of the "extra" CUDA kernels (kernels/extra.cu): the ops added so that the CUDA backend covers
// more of the CPU backend (math unary, arg reductions, Hardmax, Trilu, CumSum, GatherElements / GatherND,
// ScatterElements / ScatterND, EyeLike, group / instance normalization, LRN, scaling). Plain C++ like kernels.h; each
// launcher returns the launch status (0 = success). Device-side scalars (Trilu's k, CumSum's axis) are read by the
// kernels themselves, so nothing here synchronises or reads device memory on the host.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::extra {

// EyeLike: y [rows, cols] = (j - i == k) ? one : 0, `one` given as the element's bit pattern.
int eye_like(void* y, int64_t rows, int64_t cols, int64_t k, uint64_t one_bits, size_t elem_size, StreamT stream);

// Group normalisation of float32 [n, channels, spatial] with `groups` groups: each (n, g) row is normalised over its
// channels/groups * spatial elements, then scaled: per-channel scale/bias when per_channel, else per group.
// InstanceNormalization is groups == channels.
int group_norm_f32(const float* x, const float* scale, const float* bias, float* y, int64_t n, int64_t channels,
                   int64_t spatial, int64_t groups, bool per_channel, float eps, StreamT stream);
// LRN across channels of float32 [n, c, spatial].
int lrn_f32(const float* x, float* y, int64_t n, int64_t c, int64_t spatial, int size, float alpha, float beta,
            float bias, StreamT stream);

// NegativeLogLikelihoodLoss on float32 log-probabilities [n, c, inner] and targets [n, inner] (int64 when
// target_is_64 else int32), weight [c] or null. reduction 0 none (y [n, inner]), 1 sum, 2 mean (weighted; y scalar).
// Targets equal to ignore_index (when has_ignore) contribute 0 loss and 0 weight; other out-of-range ones give NaN.
int nll_loss_f32(const float* logp, const void* target, bool target_is_64, const float* weight, float* y, int64_t n,
                 int64_t c, int64_t inner, bool has_ignore, int64_t ignore_index, int reduction, StreamT stream);

// Einsum as a direct loop: every output element sums, over the contracted labels, the product of up to
// kEinsumInputs inputs. Strides per label and input (0: the label is absent or broadcast; repeated labels in one
// input add their strides: diagonals). dtype 0 float32, 6 float64.
constexpr int kEinsumInputs = 3;
struct EinsumPlan {
  int n_inputs = 0;
  int out_rank = 0, sum_rank = 0;
  int64_t out_dims[kMaxDims] = {}, sum_dims[kMaxDims] = {};
  int64_t out_strides[kEinsumInputs][kMaxDims] = {}, sum_strides[kEinsumInputs][kMaxDims] = {};
};
int einsum(const void* const* inputs, void* y, const EinsumPlan& p, int dtype, StreamT stream);

// Pad (mode 0 constant, 1 reflect, 2 edge, 3 wrap) and Tile (wrap with begin 0): y[o] = x[map(o - begin)], the
// constant given as the element's bit pattern. Negative begins crop.
struct PadPlan {
  int rank = 0, mode = 0;
  int64_t out_dims[kMaxDims] = {}, in_dims[kMaxDims] = {}, begin[kMaxDims] = {};
  uint64_t value_bits = 0;
};
int pad(const void* x, void* y, const PadPlan& p, size_t elem_size, StreamT stream);

// GridSample on float32 X [n, c, h, w] and grid [n, oh, ow, 2] (x, y in [-1, 1]), math in double like the CPU
// reference. mode 0 bilinear, 1 nearest, 2 bicubic; pad 0 zeros, 1 border, 2 reflection.
int grid_sample_f32(const float* x, const float* grid, float* y, int64_t n, int64_t c, int64_t h, int64_t w,
                    int64_t oh, int64_t ow, int mode, int pad, bool align_corners, StreamT stream);

// RNN / GRU / LSTM (float32 I/O, double math like the CPU reference): one block per (direction, batch entry) runs
// the whole sequence, with __syncthreads between the phases of a step. kind 0 RNN, 1 GRU, 2 LSTM; activation codes
// 0 Tanh, 1 Sigmoid, 2 Relu, 3 Affine, 4 LeakyRelu, 5 ThresholdedRelu, 6 ScaledTanh, 7 HardSigmoid, 8 Elu,
// 9 Softsign, 10 Softplus (per direction: kind + 1 of them). Optional pointers may be null. scratch: device doubles,
// dirs * batch * rnn_scratch_per_block(gates, hidden) of them.
struct RnnPlan {
  int kind = 0, gates = 1, dirs = 1;
  bool reverse_only = false, batch_first = false, has_clip = false, lbr = false, input_forget = false,
       lens_64 = false;
  int64_t seq = 0, batch = 0, in = 0, hidden = 0;
  double clip = 0.0;
  int act[6] = {};
  double alpha[6] = {}, beta[6] = {};
};
struct RnnTensors {
  const float *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr, *h0 = nullptr, *c0 = nullptr, *p = nullptr;
  const void* lens = nullptr;
  float *y = nullptr, *yh = nullptr, *yc = nullptr;
  double* scratch = nullptr;
};
inline int64_t rnn_scratch_per_block(int gates, int64_t hidden) { return (4 + 2 * int64_t(gates)) * hidden; }
int rnn_f32(const RnnTensors& t, const RnnPlan& p, StreamT stream);

// 2-D transposed convolution (NCHW, grouped, strided, dilated, padded), bias may be null. w: [C, K/groups, kh, kw].
struct ConvT2d {
  int64_t n = 0, c = 0, h = 0, w = 0, k = 0, oh = 0, ow = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
};
int conv_transpose2d_f32(const float* x, const float* w, const float* bias, float* y, const ConvT2d& p,
                         StreamT stream);

}  // namespace kilnrt::cuda::kernels::extra
