// Host entry point of the RNN / GRU / LSTM kernel (rnn.cu). Plain C++ like kernels.h; returns the launch status.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels {

// RNN / GRU / LSTM (float32 I/O, double math like the CPU reference): one block per (direction, batch entry) runs
// the whole sequence, with __syncthreads between the phases of a step. kind 0 RNN, 1 GRU, 2 LSTM; activation codes
// 0 Tanh, 1 Sigmoid, 2 Relu, 3 Affine, 4 LeakyRelu, 5 ThresholdedRelu, 6 ScaledTanh, 7 HardSigmoid, 8 Elu,
// 9 Softsign, 10 Softplus (per direction: kind + 1 of them). Optional pointers may be null. scratch: device doubles,
// dirs * batch * rnn_scratch_per_block(gates, hidden) of them.
struct RnnPlan {
  int kind = 0, gates = 1, dirs = 1;
  bool reverse_only = false, batch_first = false, has_clip = false, lbr = false, input_forget = false, lens_64 = false;
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

}  // namespace kilnrt::cuda::kernels
