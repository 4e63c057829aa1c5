// The fast elementwise / copy kernels (elementwise_fast.cu, strided_copy_fast.cu, the Cast shortcut) called
// directly on the GPU and compared with a host reference: float32 / float16 / bfloat16, odd sizes (scalar tails),
// misaligned pointers (no vectors), same-shape / scalar / bias / per-channel / mask / generic broadcasts, NaN and inf,
// head-split and tiled transposes with partial tiles, slices at offsets, Gather rows (16-byte units) and elements.
// Skips with the reason without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda/kernels/kernels.h"
#include "cuda/context_guard.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/doctor.h"
#include "kilnrt/dtype.h"
#include "ops/math/binary/cuda/binary_kernels.h"
#include "ops/math/logic/cuda/where_kernels.h"
#include "ops/math/unary/cuda/unary_kernels.h"
#include "ops/shape/slice_gather/cuda/gather_kernels.h"

namespace k = kilnrt::cuda::kernels;

namespace {

// Storage types: 0 float32, 1 float16, 2 bfloat16 (unary's dt codes).
size_t fsize(int dt) { return dt == 0 ? 4 : 2; }
const char* fname(int dt) { return dt == 0 ? "float32" : (dt == 1 ? "float16" : "bfloat16"); }
int binary_code(int dt) { return dt == 0 ? 0 : (dt == 1 ? 4 : 5); }
float round_to(int dt, float v) {
  if (dt == 1) return kilnrt::half_to_float(kilnrt::float_to_half(v));
  if (dt == 2) return kilnrt::bfloat16_to_float(kilnrt::float_to_bfloat16(v));
  return v;
}
std::vector<uint8_t> encode(int dt, const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * fsize(dt));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == 0) {
      std::memcpy(&b[i * 4], &v[i], 4);
    } else {
      const uint16_t h = dt == 1 ? kilnrt::float_to_half(v[i]) : kilnrt::float_to_bfloat16(v[i]);
      std::memcpy(&b[i * 2], &h, 2);
    }
  }
  return b;
}
std::vector<float> decode(int dt, const std::vector<uint8_t>& b) {
  std::vector<float> v(b.size() / fsize(dt));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == 0) {
      std::memcpy(&v[i], &b[i * 4], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &b[i * 2], 2);
      v[i] = dt == 1 ? kilnrt::half_to_float(h) : kilnrt::bfloat16_to_float(h);
    }
  }
  return v;
}

// Device memory holding `bytes` at byte offset `offset` (offset 0: 256-byte aligned; else misaligned on purpose).
struct Dev {
  kilnrt::cuda::DeviceBuffer buf;
  size_t offset, bytes;
  Dev(size_t bytes_, size_t offset_) : buf(0, bytes_ + offset_ + 64), offset(offset_), bytes(bytes_) {}
  void* ptr() const { return static_cast<uint8_t*>(buf.data()) + offset; }
};

class CudaFastKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!kilnrt::cuda_available(&why)) GTEST_SKIP() << "no usable CUDA GPU: " << why;
    guard_ = std::make_unique<kilnrt::cuda::ContextGuard>(0);
    stream_ = std::make_unique<kilnrt::cuda::Stream>(0);
  }
  k::StreamT st() const { return stream_->get(); }
  Dev up(const std::vector<uint8_t>& host, size_t offset = 0) {
    Dev d(host.size(), offset);
    if (!host.empty()) d.buf.copy_from_host_async(host.data(), host.size(), st(), offset);
    return d;
  }
  std::vector<uint8_t> down(const Dev& d) {
    std::vector<uint8_t> h(d.bytes);
    if (!h.empty()) d.buf.copy_to_host_async(h.data(), h.size(), st(), d.offset);
    stream_->synchronize();
    return h;
  }
  std::unique_ptr<kilnrt::cuda::ContextGuard> guard_;
  std::unique_ptr<kilnrt::cuda::Stream> stream_;
};

std::vector<float> random_values(size_t n, std::mt19937& rng, bool specials) {
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  if (specials && n > 8) {
    v[1] = NAN;
    v[n / 2] = INFINITY;
    v[n - 1] = -INFINITY;
    v[n / 3] = 0.f;
  }
  return v;
}

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Broadcast3 as the CUDA layers build it: s0 the contiguous output (or Where's first input), s1 / s2 the inputs.
k::Broadcast3 broadcast3(const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins) {
  k::Broadcast3 bc;
  bool same = true;
  for (const auto& s : ins) same &= s == out;
  bc.contiguous_same = same;
  if (same) return bc;
  bc.rank = static_cast<int>(out.size());
  int64_t* st[3] = {bc.s0, bc.s1, bc.s2};
  for (int d = 0; d < bc.rank; ++d) bc.dims[d] = out[d];
  for (size_t kk = 0; kk < ins.size(); ++kk) {
    int64_t run = 1;
    for (int d = bc.rank - 1; d >= 0; --d) {
      const int sd = d - (bc.rank - static_cast<int>(ins[kk].size()));
      st[kk][d] = sd >= 0 && ins[kk][sd] != 1 ? run : 0;
      if (sd >= 0) run *= ins[kk][sd];
    }
  }
  return bc;
}

// Offset of output element i in an input of shape `in` broadcast to `out`.
int64_t bcast_offset(const std::vector<int64_t>& out, const std::vector<int64_t>& in, int64_t i) {
  int64_t off = 0, run = 1;
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    const int64_t idx = i % out[d];
    i /= out[d];
    const int sd = d - static_cast<int>(out.size() - in.size());
    if (sd < 0) continue;
    if (in[sd] != 1) off += idx * run;
    run *= in[sd];
  }
  return off;
}

float host_binary(k::BinaryOp op, float x, float y) {
  switch (op) {
    case k::BinaryOp::kAdd: return x + y;
    case k::BinaryOp::kSub: return x - y;
    case k::BinaryOp::kMul: return x * y;
    case k::BinaryOp::kDiv: return x / y;
    case k::BinaryOp::kPow: return std::pow(x, y);
    case k::BinaryOp::kMax: return (std::isnan(x) || x > y) ? x : y;
    case k::BinaryOp::kMin: return (std::isnan(x) || x < y) ? x : y;
    case k::BinaryOp::kPRelu: return x < 0.f ? x * y : x;
    default: {  // kMod, numpy semantics
      float r = std::fmod(x, y);
      if (r != 0.f && ((r < 0.f) != (y < 0.f))) r += y;
      return r;
    }
  }
}

// got vs want (both already in storage precision): NaN where want is NaN, equal infinities, else within tolerance.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rtol, double atol,
                  const std::string& label) {
  ASSERT_EQ(got.size(), want.size()) << label;
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 5; ++i) {
    const float a = got[i], b = want[i];
    bool ok;
    if (std::isnan(b))
      ok = std::isnan(a);
    else if (std::isinf(b))
      ok = a == b;
    else
      ok = std::fabs(double(a) - b) <= atol + rtol * std::fabs(double(b));
    if (!ok) {
      ++bad;
      ADD_FAILURE() << label << ": element " << i << " got " << a << ", want " << b;
    }
  }
}

double rtol_of(int dt) { return dt == 0 ? 2e-6 : (dt == 1 ? 2.0 / 2048 : 2.0 / 256); }

struct BinCase {
  std::vector<int64_t> out, a, b;
  size_t a_off = 0, b_off = 0, y_off = 0;  // byte offsets (misalignment)
};

}  // namespace

TEST_F(CudaFastKernels, BinaryMatchesHostReference) {
  std::mt19937 rng(3);
  const std::vector<BinCase> cases = {
      {{1}, {1}, {1}},                                  // one element
      {{7}, {7}, {7}},                                  // below one vector
      {{1001}, {1001}, {1001}},                         // vectors + tail
      {{1 << 16}, {1 << 16}, {1}},                      // scalar
      {{37, 64}, {37, 64}, {64}},                       // bias
      {{37, 60}, {37, 60}, {60}},                       // bias, innermost not a vector multiple
      {{2, 16, 7, 7}, {2, 16, 7, 7}, {1, 16, 1, 1}},    // per-channel, odd spatial
      {{2, 16, 8, 8}, {2, 16, 8, 8}, {2, 16, 1, 1}},    // SE scale
      {{2, 3, 16, 16}, {2, 3, 16, 16}, {2, 1, 1, 16}},  // attention mask
      {{3, 4, 5}, {3, 1, 5}, {1, 4, 1}},                // generic both-sides broadcast
      {{1000}, {1000}, {1000}, 4, 0, 0},                // misaligned input
      {{1000}, {1000}, {1000}, 0, 0, 4},                // misaligned output
      {{64, 32}, {64, 32}, {32}, 0, 8, 0},              // misaligned bias
  };
  const k::BinaryOp ops[] = {k::BinaryOp::kAdd, k::BinaryOp::kSub, k::BinaryOp::kMul,
                             k::BinaryOp::kDiv, k::BinaryOp::kMax, k::BinaryOp::kMin,
                             k::BinaryOp::kPow, k::BinaryOp::kMod, k::BinaryOp::kPRelu};
  for (int dt = 0; dt < 3; ++dt)
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const BinCase& c = cases[ci];
      const int64_t n = numel(c.out);
      std::vector<float> a = random_values(numel(c.a), rng, true), b = random_values(numel(c.b), rng, false);
      for (auto& v : a) v = round_to(dt, v);
      for (auto& v : b) v = round_to(dt, v == 0.f ? 0.5f : v);
      Dev da = up(encode(dt, a), c.a_off), db = up(encode(dt, b), c.b_off);
      Dev dy(n * fsize(dt), c.y_off);
      const k::Broadcast3 bc = broadcast3(c.out, {c.out, c.a, c.b});
      for (k::BinaryOp op : ops) {
        const std::string label =
            std::string(fname(dt)) + " case " + std::to_string(ci) + " op " + std::to_string(static_cast<int>(op));
        ASSERT_EQ(k::binary(op, binary_code(dt), da.ptr(), db.ptr(), dy.ptr(), n, bc, st()), 0) << label;
        std::vector<float> want(n);
        for (int64_t i = 0; i < n; ++i)
          want[i] = round_to(dt, host_binary(op, a[bcast_offset(c.out, c.a, i)], b[bcast_offset(c.out, c.b, i)]));
        const bool exact = op != k::BinaryOp::kPow;
        expect_close(decode(dt, down(dy)), want, exact ? (dt == 0 ? 1e-7 : 0.0) : rtol_of(dt), exact ? 0 : 1e-6, label);
        if (HasFailure()) return;
      }
    }
}

TEST_F(CudaFastKernels, UnaryMatchesHostReference) {
  std::mt19937 rng(5);
  struct U {
    k::UnaryOp op;
    float (*f)(float);
  };
  const U ops[] = {
      {k::UnaryOp::kRelu, [](float v) { return v < 0.f ? 0.f : v; }},
      {k::UnaryOp::kSigmoid, [](float v) { return 1.f / (1.f + std::exp(-v)); }},
      {k::UnaryOp::kTanh, [](float v) { return std::tanh(v); }},
      {k::UnaryOp::kErf, [](float v) { return std::erf(v); }},
      {k::UnaryOp::kGeluErf, [](float v) { return 0.5f * v * (1.f + std::erf(v * 0.70710678f)); }},
      {k::UnaryOp::kGeluTanh,
       [](float v) { return 0.5f * v * (1.f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v))); }},
      {k::UnaryOp::kNeg, [](float v) { return -v; }},
  };
  const int64_t sizes[] = {1, 5, 8, 1003, (1 << 18) + 3};
  for (int dt = 0; dt < 3; ++dt)
    for (int64_t n : sizes)
      for (size_t misalign : {size_t(0), fsize(dt)}) {  // one element off: element-aligned, not 16-byte aligned
        std::vector<float> x = random_values(n, rng, true);
        for (auto& v : x) v = round_to(dt, v);
        Dev dx = up(encode(dt, x), misalign);
        Dev dy(n * fsize(dt), 0);
        for (const U& u : ops) {
          const std::string label = std::string(fname(dt)) + " n " + std::to_string(n) + " misalign " +
                                    std::to_string(misalign) + " op " + std::to_string(static_cast<int>(u.op));
          ASSERT_EQ(k::unary(u.op, dt, dx.ptr(), dy.ptr(), n, 0.f, 0.f, st()), 0) << label;
          std::vector<float> want(n);
          for (int64_t i = 0; i < n; ++i) want[i] = round_to(dt, u.f(x[i]));
          expect_close(decode(dt, down(dy)), want, rtol_of(dt) + 1e-5, 1e-6, label);
          if (HasFailure()) return;
        }
      }
}

TEST_F(CudaFastKernels, WhereMatchesHostReference) {
  std::mt19937 rng(9);
  struct W {
    std::vector<int64_t> out, c, x, z;
    size_t c_off;
  };
  const std::vector<W> cases = {
      {{2, 3, 16, 16}, {2, 3, 16, 16}, {1}, {2, 3, 16, 16}, 0},  // BERT: Where(isnan(p), 0, p)
      {{2, 3, 16, 16}, {2, 1, 1, 16}, {2, 3, 16, 16}, {1}, 0},   // mask broadcast
      {{1001}, {1001}, {1001}, {1001}, 0},                       // tail
      {{1001}, {1001}, {1001}, {1001}, 3},                       // misaligned condition
      {{5, 6, 7}, {5, 1, 7}, {1, 6, 1}, {5, 6, 7}, 0},           // generic
  };
  for (size_t es : {size_t(1), size_t(2), size_t(4), size_t(8)})
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const W& w = cases[ci];
      const int64_t n = numel(w.out);
      std::vector<uint8_t> c(numel(w.c)), x(numel(w.x) * es), z(numel(w.z) * es);
      for (auto& v : c) v = rng() % 2;
      for (auto& v : x) v = rng() & 255;
      for (auto& v : z) v = rng() & 255;
      Dev dc = up(c, w.c_off), dx = up(x), dz = up(z), dy(n * es, 0);
      const k::Broadcast3 bc = broadcast3(w.out, {w.c, w.x, w.z});
      ASSERT_EQ(k::where(static_cast<const uint8_t*>(dc.ptr()), dx.ptr(), dz.ptr(), dy.ptr(), n, bc, es, st()), 0);
      const std::vector<uint8_t> got = down(dy);
      for (int64_t i = 0; i < n; ++i) {
        const bool cv = c[bcast_offset(w.out, w.c, i)] != 0;
        const uint8_t* src = cv ? &x[bcast_offset(w.out, w.x, i) * es] : &z[bcast_offset(w.out, w.z, i) * es];
        ASSERT_EQ(std::memcmp(&got[i * es], src, es), 0) << "element size " << es << " case " << ci << " element " << i;
      }
    }
}

TEST_F(CudaFastKernels, StridedCopyTransposesAndSlices) {
  std::mt19937 rng(11);
  struct T {
    std::vector<int64_t> in;
    std::vector<int> perm;
  };
  const std::vector<T> cases = {
      {{3, 17, 5, 64}, {0, 2, 1, 3}},  // head split: rows of D as vectors
      {{3, 5, 40, 72}, {0, 1, 3, 2}},  // K^T: tiled, partial tiles
      {{2, 24, 9, 11}, {0, 2, 3, 1}},  // NCHW -> NHWC
      {{2, 9, 11, 24}, {0, 3, 1, 2}},  // NHWC -> NCHW
      {{33, 65}, {1, 0}},              // plain 2-D
      {{70, 3, 40}, {2, 1, 0}},        // tiled with a batch dim in the middle
  };
  for (size_t es : {size_t(1), size_t(2), size_t(4), size_t(8)})
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const T& t = cases[ci];
      const int r = static_cast<int>(t.in.size());
      const int64_t n = numel(t.in);
      std::vector<uint8_t> x(n * es);
      for (auto& v : x) v = rng() & 255;
      std::vector<int64_t> ist(r, 1), od(r), ost(r, 1);
      for (int i = r - 2; i >= 0; --i) ist[i] = ist[i + 1] * t.in[i + 1];
      for (int i = 0; i < r; ++i) od[i] = t.in[t.perm[i]];
      for (int i = r - 2; i >= 0; --i) ost[i] = ost[i + 1] * od[i + 1];
      k::Strided s;
      s.rank = r;
      for (int i = 0; i < r; ++i) {
        s.dims[i] = od[i];
        s.in_strides[i] = ist[t.perm[i]];
        s.out_strides[i] = ost[i];
      }
      Dev dx = up(x), dy(n * es, 0);
      ASSERT_EQ(k::strided_copy(dy.ptr(), dx.ptr(), s, es, st()), 0);
      const std::vector<uint8_t> got = down(dy);
      for (int64_t i = 0; i < n; ++i) {
        int64_t rem = i, src = 0;
        for (int d = r - 1; d >= 0; --d) {
          src += (rem % od[d]) * s.in_strides[d];
          rem /= od[d];
        }
        ASSERT_EQ(std::memcmp(&got[i * es], &x[src * es], es), 0)
            << "element size " << es << " case " << ci << " element " << i;
      }
    }
  // A slice at an offset (rows 3..42, cols 8..71 of a 50 x 80 float16 matrix), then a transposed slice (tiled).
  std::vector<uint8_t> x(50 * 80 * 2);
  for (auto& v : x) v = rng() & 255;
  Dev dx = up(x), dy(40 * 64 * 2, 0);
  for (bool transposed : {false, true}) {
    k::Strided s;
    s.rank = 2;
    s.dims[0] = transposed ? 64 : 40;
    s.dims[1] = transposed ? 40 : 64;
    s.in_strides[0] = transposed ? 1 : 80;
    s.in_strides[1] = transposed ? 80 : 1;
    s.out_strides[0] = transposed ? 40 : 64;
    s.out_strides[1] = 1;
    s.in_offset = 3 * 80 + 8;
    ASSERT_EQ(k::strided_copy(dy.ptr(), dx.ptr(), s, 2, st()), 0);
    const std::vector<uint8_t> got = down(dy);
    for (int64_t i = 0; i < 40; ++i)
      for (int64_t j = 0; j < 64; ++j) {
        const int64_t o = transposed ? j * 40 + i : i * 64 + j;
        ASSERT_EQ(std::memcmp(&got[o * 2], &x[((3 + i) * 80 + 8 + j) * 2], 2), 0)
            << (transposed ? "transposed " : "") << "slice element " << i << "," << j;
      }
  }
}

TEST_F(CudaFastKernels, CastBetweenFloat32And16Bit) {
  std::mt19937 rng(13);
  std::vector<float> x = random_values(1001, rng, true);
  x[7] = 1e6f;   // beyond fp16: inf
  x[8] = 1e-8f;  // fp16 subnormal / zero
  Dev dx = up(encode(0, x));
  for (int to : {7, 8}) {
    const int dt = to == 7 ? 1 : 2;
    Dev dy(x.size() * 2, 0), back(x.size() * 4, 0);
    ASSERT_EQ(k::cast(dx.ptr(), 0, dy.ptr(), to, static_cast<int64_t>(x.size()), st()), 0);
    ASSERT_EQ(k::cast(dy.ptr(), to, back.ptr(), 0, static_cast<int64_t>(x.size()), st()), 0);
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = round_to(dt, x[i]);
    expect_close(decode(dt, down(dy)), want, 0, 0, std::string("to ") + fname(dt));
    expect_close(decode(0, down(back)), want, 0, 0, std::string("back from ") + fname(dt));
  }
}

TEST_F(CudaFastKernels, GatherRowsAndElements) {
  std::mt19937 rng(17);
  const std::vector<int64_t> idx_host = {2, -1, 0, 6, 9, -8, 3};  // 9 and -8 are out of range: zeros
  for (size_t es : {size_t(1), size_t(2), size_t(4), size_t(8)})
    for (int64_t inner : {int64_t(1), int64_t(5), int64_t(64), int64_t(768)}) {
      const int64_t outer = 3, axis = 7, n_idx = static_cast<int64_t>(idx_host.size());
      std::vector<uint8_t> x(outer * axis * inner * es);
      for (auto& v : x) v = 1 + rng() % 255;
      std::vector<uint8_t> idx_bytes(idx_host.size() * 8);
      std::memcpy(idx_bytes.data(), idx_host.data(), idx_bytes.size());
      Dev dx = up(x), di = up(idx_bytes), dy(outer * n_idx * inner * es, 0);
      ASSERT_EQ(
          k::gather(dx.ptr(), static_cast<const int64_t*>(di.ptr()), dy.ptr(), outer, axis, n_idx, inner, es, st()), 0);
      const std::vector<uint8_t> got = down(dy);
      const std::vector<uint8_t> zero(es, 0);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < n_idx; ++j)
          for (int64_t i = 0; i < inner; ++i) {
            int64_t kk = idx_host[j] < 0 ? idx_host[j] + axis : idx_host[j];
            const uint8_t* want = kk >= 0 && kk < axis ? &x[((o * axis + kk) * inner + i) * es] : zero.data();
            ASSERT_EQ(std::memcmp(&got[((o * n_idx + j) * inner + i) * es], want, es), 0)
                << "element size " << es << " inner " << inner << " at " << o << "," << j << "," << i;
          }
    }
}

// Whole-tensor float32 <-> 16-bit conversions (graph inputs / outputs of 16-bit engines): the 8-value vector kernel,
// its scalar tail (sizes not a multiple of 8) and the scalar kernel for misaligned pointers, in both 16-bit formats,
// against the host's round-to-nearest-even conversion (NaN stays NaN, infinities and overflow to inf).
TEST_F(CudaFastKernels, Float32To16AndBack) {
  std::mt19937 rng(23);
  for (int dt : {1, 2})
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(8), int64_t(9), int64_t(4099), int64_t(602112 * 8 + 5)})
      for (size_t offset : {size_t(0), size_t(4)}) {
        std::vector<float> v = random_values(static_cast<size_t>(n), rng, true);
        if (n > 16) v[5] = 1e6f;  // float16 overflow -> inf
        const std::string what =
            std::string(fname(dt)) + " n " + std::to_string(n) + " offset " + std::to_string(offset);
        Dev x = up(encode(0, v), offset), y(static_cast<size_t>(n) * 2, offset / 2);
        ASSERT_EQ(k::f32_to_16(static_cast<const float*>(x.ptr()), y.ptr(), n, dt == 2, st()), 0) << what;
        const std::vector<uint8_t> got = down(y), want = encode(dt, v);
        ASSERT_EQ(got.size(), want.size());
        const std::vector<float> got_values = decode(dt, got);
        for (int64_t i = 0; i < n; ++i) {
          uint16_t g, w;
          std::memcpy(&g, &got[i * 2], 2);
          std::memcpy(&w, &want[i * 2], 2);
          if (std::isnan(v[i]))
            ASSERT_TRUE(std::isnan(got_values[i])) << what << " at " << i;
          else
            ASSERT_EQ(g, w) << what << " at " << i << " value " << v[i];
        }
        Dev back(static_cast<size_t>(n) * 4, offset);
        ASSERT_EQ(k::f16_to_32(y.ptr(), static_cast<float*>(back.ptr()), n, dt == 2, st()), 0) << what;
        const std::vector<float> b = decode(0, down(back)), half = decode(dt, want);
        for (int64_t i = 0; i < n; ++i) {
          if (std::isnan(half[i]))
            ASSERT_TRUE(std::isnan(b[i])) << what << " back at " << i;
          else
            ASSERT_EQ(b[i], half[i]) << what << " back at " << i;
        }
      }
}
