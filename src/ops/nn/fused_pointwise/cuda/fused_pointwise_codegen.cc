// CUDA C++ source of a FusedPointwise program (see fused_pointwise_codegen.h).
#include "ops/nn/fused_pointwise/cuda/fused_pointwise_codegen.h"

#include <cstring>
#include <sstream>

#include "core/check.h"

namespace kilnrt::backends::cuda {
namespace {

using namespace ops::nn;

// The fixed part: argument block, 16-bit conversions, loads and stores.
constexpr const char* kPrelude = R"(// kilnrt FusedPointwise kernel (generated)
struct PwArgs {
  const void* in[8];
  long long stride[8][6];
  long long dims[6];
  int code[8];
  int kind[8];
  void* out;
  long long n;
  int out_code;
  int rank;
};
__device__ __forceinline__ float pw_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short pw_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float pw_b2f(unsigned short b) { return __uint_as_float(((unsigned)b) << 16); }
__device__ __forceinline__ unsigned short pw_f2b(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
__device__ __forceinline__ float pw_round(float v, int code) {
  return code == 1 ? pw_h2f(pw_f2h(v)) : (code == 2 ? pw_b2f(pw_f2b(v)) : v);
}
__device__ __forceinline__ float pw_load(const void* p, long long i, int code) {
  switch (code) {
    case 0: return ((const float*)p)[i];
    case 1: return pw_h2f(((const unsigned short*)p)[i]);
    case 2: return pw_b2f(((const unsigned short*)p)[i]);
    default: return ((const unsigned char*)p)[i] ? 1.f : 0.f;
  }
}
__device__ __forceinline__ void pw_store(void* p, long long i, int code, float v) {
  switch (code) {
    case 0: ((float*)p)[i] = v; break;
    case 1: ((unsigned short*)p)[i] = pw_f2h(v); break;
    default: ((unsigned short*)p)[i] = pw_f2b(v); break;
  }
}
// V consecutive values at element offset `off` (16-byte aligned): 4 float32 or 8 16-bit values.
template <int S> __device__ __forceinline__ void pw_vload(const void* p, long long off, float* x) {
  if (S == 0) {
    const float4 f = *(const float4*)((const float*)p + off);
    x[0] = f.x; x[1] = f.y; x[2] = f.z; x[3] = f.w;
  } else {
    const uint4 u = *(const uint4*)((const unsigned short*)p + off);
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const unsigned short lo = (unsigned short)(w[j] & 0xffffu), hi = (unsigned short)(w[j] >> 16);
      x[2 * j] = S == 1 ? pw_h2f(lo) : pw_b2f(lo);
      x[2 * j + 1] = S == 1 ? pw_h2f(hi) : pw_b2f(hi);
    }
  }
}
template <int S> __device__ __forceinline__ void pw_vstore(void* p, long long off, const float* y) {
  if (S == 0) {
    *(float4*)((float*)p + off) = make_float4(y[0], y[1], y[2], y[3]);
  } else {
    unsigned w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const unsigned lo = S == 1 ? pw_f2h(y[2 * j]) : pw_f2b(y[2 * j]);
      const unsigned hi = S == 1 ? pw_f2h(y[2 * j + 1]) : pw_f2b(y[2 * j + 1]);
      w[j] = lo | (hi << 16);
    }
    *(uint4*)((unsigned short*)p + off) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}
// Offset of output element i in input k (strided kinds): 32-bit division when the output is small enough.
__device__ __forceinline__ long long pw_offset(const PwArgs& a, int k, long long i) {
  long long off = 0;
  if (a.n <= 0x7fffffffLL) {
    unsigned rem = (unsigned)i;
    for (int d = a.rank - 1; d >= 0; --d) {
      const unsigned dim = (unsigned)a.dims[d], c = rem % dim;
      rem /= dim;
      off += (long long)c * a.stride[k][d];
    }
  } else {
    long long rem = i;
    for (int d = a.rank - 1; d >= 0; --d) {
      const long long c = rem % a.dims[d];
      rem /= a.dims[d];
      off += c * a.stride[k][d];
    }
  }
  return off;
}
)";

// A float immediate, exact: the bits reinterpreted (covers inf and NaN).
std::string lit(float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  std::ostringstream os;
  os << "__uint_as_float(0x" << std::hex << bits << "u)";
  return os.str();
}

std::string expr(const PwInstr& in) {
  const std::string a = "r" + std::to_string(in.a), b = "r" + std::to_string(in.b), c = "r" + std::to_string(in.c);
  const std::string p0 = lit(in.p0), p1 = lit(in.p1);
  switch (in.op) {
    case kPwConst: return p0;
    case kPwNeg: return "-" + a;
    case kPwAbs: return "fabsf(" + a + ")";
    case kPwExp: return "expf(" + a + ")";
    case kPwLog: return "logf(" + a + ")";
    case kPwSqrt: return "sqrtf(" + a + ")";
    case kPwReciprocal: return "1.f / " + a;
    case kPwSigmoid: return "1.f / (1.f + expf(-" + a + "))";
    case kPwTanh: return "tanhf(" + a + ")";
    case kPwErf: return "erff(" + a + ")";
    case kPwRelu: return a + " < 0.f ? 0.f : " + a;
    case kPwFloor: return "floorf(" + a + ")";
    case kPwCeil: return "ceilf(" + a + ")";
    case kPwSin: return "sinf(" + a + ")";
    case kPwCos: return "cosf(" + a + ")";
    case kPwSoftplus: return a + " > 20.f ? " + a + " : log1pf(expf(" + a + "))";
    case kPwSoftsign: return a + " / (1.f + fabsf(" + a + "))";
    case kPwHardSwish: return a + " * fminf(1.f, fmaxf(0.f, " + a + " * (1.f / 6.f) + 0.5f))";
    case kPwIdentity: return a;
    case kPwMish: return a + " * tanhf(" + a + " > 20.f ? " + a + " : log1pf(expf(" + a + ")))";
    case kPwLeakyRelu: return a + " < 0.f ? " + p0 + " * " + a + " : " + a;
    case kPwElu: return a + " < 0.f ? " + p0 + " * (expf(" + a + ") - 1.f) : " + a;
    case kPwHardSigmoid: return "fminf(1.f, fmaxf(0.f, " + p0 + " * " + a + " + " + p1 + "))";
    case kPwClip: return a + " < " + p0 + " ? " + p0 + " : (" + a + " > " + p1 + " ? " + p1 + " : " + a + ")";
    case kPwPowScalar:
      if (in.p0 == 2.f) return a + " * " + a;
      if (in.p0 == 1.f) return a;
      if (in.p0 == 0.5f) return "sqrtf(" + a + ")";
      return "powf(" + a + ", " + p0 + ")";
    case kPwSelu: return p1 + " * (" + a + " <= 0.f ? " + p0 + " * (expf(" + a + ") - 1.f) : " + a + ")";
    case kPwCelu: return "fmaxf(0.f, " + a + ") + fminf(0.f, " + p0 + " * (expf(" + a + " / " + p0 + ") - 1.f))";
    case kPwThresholdedRelu: return a + " > " + p0 + " ? " + a + " : 0.f";
    case kPwGelu:
      if (in.p0 != 0.f)
        return "0.5f * " + a + " * (1.f + tanhf(0.7978845608f * (" + a + " + 0.044715f * " + a + " * " + a + " * " + a +
               ")))";
      return "0.5f * " + a + " * (1.f + erff(" + a + " * 0.7071067811865476f))";
    case kPwCast: return "pw_round(" + a + ", " + std::to_string(static_cast<int>(in.p0)) + ")";
    case kPwAdd: return a + " + " + b;
    case kPwSub: return a + " - " + b;
    case kPwMul: return a + " * " + b;
    case kPwDiv: return a + " / " + b;
    case kPwPow: return "powf(" + a + ", " + b + ")";
    case kPwMax:
      return "(" + a + " != " + a + " || " + b + " != " + b + ") ? __uint_as_float(0x7fc00000u) : fmaxf(" + a + ", " +
             b + ")";
    case kPwMin:
      return "(" + a + " != " + a + " || " + b + " != " + b + ") ? __uint_as_float(0x7fc00000u) : fminf(" + a + ", " +
             b + ")";
    case kPwPRelu: return a + " < 0.f ? " + b + " * " + a + " : " + a;
    case kPwWhere: return a + " != 0.f ? " + b + " : " + c;
    default: KILNRT_THROW(kInvalidModel, "FusedPointwise", "no CUDA code for opcode " << in.op);
  }
}

}  // namespace

const std::vector<std::string>& fused_pointwise_kernel_names() {
  static const std::vector<std::string>* names = new std::vector<std::string>{
      "fp_scalar<0>", "fp_scalar<1>", "fp_scalar<2>", "fp_scalar<3>", "fp_vec<0>", "fp_vec<1>", "fp_vec<2>"};
  return *names;
}

std::string fused_pointwise_source(const PwProgram& p, const std::vector<bool>& in_bool) {
  const int n = p.num_inputs;
  KILNRT_CHECK(n >= 1 && n <= kPwMaxInputs && static_cast<int>(in_bool.size()) == n, kInvalidArgument, "FusedPointwise",
               "codegen needs 1.." << kPwMaxInputs << " inputs with their kinds, got " << n);
  std::ostringstream s;
  s << kPrelude;
  // The program: registers r0 .. r(n-1) are the inputs.
  s << "__device__ __forceinline__ float pw_eval(const float* x) {\n";
  for (int k = 0; k < n; ++k) s << "  const float r" << k << " = x[" << k << "];\n";
  int r = n;
  for (const PwInstr& in : p.code) s << "  const float r" << r++ << " = " << expr(in) << ";\n";
  s << "  return r" << r - 1 << ";\n}\n";
  // Storage code of input k in variant S (bool inputs are bytes in every variant).
  auto code = [&](int k) {
    return in_bool[k] ? std::string("3") : std::string("(S == 3 ? a.code[" + std::to_string(k) + "] : S)");
  };
  s << "template <int S> __global__ void fp_scalar(const PwArgs a) {\n"
       "  const long long step = (long long)gridDim.x * blockDim.x;\n"
       "  const int oc = S == 3 ? a.out_code : S;\n"
       "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += step) {\n"
       "    float x["
    << n << "];\n";
  for (int k = 0; k < n; ++k)
    s << "    x[" << k << "] = pw_load(a.in[" << k << "], a.kind[" << k << "] == 0 ? i : (a.kind[" << k
      << "] == 1 ? 0 : pw_offset(a, " << k << ", i)), " << code(k) << ");\n";
  s << "    pw_store(a.out, i, oc, pw_eval(x));\n  }\n}\n";
  s << "template <int S> __global__ void fp_vec(const PwArgs a) {\n"
       "  constexpr int V = S == 0 ? 4 : 8;\n"
       "  const long long nv = a.n / V, step = (long long)gridDim.x * blockDim.x;\n"
       "  for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < nv; v += step) {\n"
       "    const long long i0 = v * V;\n"
       "    float x["
    << n << "][V];\n";
  for (int k = 0; k < n; ++k) {
    const std::string K = std::to_string(k);
    s << "    {\n      const int kind = a.kind[" << K << "];\n"
      << "      const long long off = kind == 0 ? i0 : (kind == 1 ? 0 : pw_offset(a, " << K << ", i0));\n";
    if (in_bool[k]) {
      s << "      const unsigned char* p = (const unsigned char*)a.in[" << K << "];\n"
        << "#pragma unroll\n      for (int j = 0; j < V; ++j) x[" << K
        << "][j] = p[(kind == 0 || kind == 4) ? off + j : off] ? 1.f : 0.f;\n";
    } else {
      s << "      if (kind == 0 || kind == 4) {\n        pw_vload<S>(a.in[" << K << "], off, x[" << K << "]);\n"
        << "      } else {\n        const float c = pw_load(a.in[" << K << "], off, S);\n"
        << "#pragma unroll\n        for (int j = 0; j < V; ++j) x[" << K << "][j] = c;\n      }\n";
    }
    s << "    }\n";
  }
  s << "    float y[V];\n#pragma unroll\n    for (int j = 0; j < V; ++j) {\n      float xs[" << n << "];\n";
  for (int k = 0; k < n; ++k) s << "      xs[" << k << "] = x[" << k << "][j];\n";
  s << "      y[j] = pw_eval(xs);\n    }\n    pw_vstore<S>(a.out, i0, y);\n  }\n}\n";
  return s.str();
}

}  // namespace kilnrt::backends::cuda
