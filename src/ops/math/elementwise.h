// Shared pieces of the elementwise CPU kernels: storage types for every kilnrt dtype (half and bfloat16 are stored
// as 16-bit words and computed in float), dtype dispatch, and the generic unary / n-ary broadcasting loops.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "core/check.h"
#include "kilnrt/dtype.h"
#include "kilnrt/tensor.h"
#include "ops/math/broadcast.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {

// Storage types of the 16-bit floats, distinct so that dispatch can tell them apart.
struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2, "16-bit float storage");
static_assert(sizeof(bool) == 1, "kilnrt stores bool as one byte");

// Compute<T>: the type arithmetic is done in, and conversions from/to storage.
template <class T>
struct Compute {
  using type = T;
  static type load(T v) { return v; }
  static T store(type v) { return v; }
};
template <>
struct Compute<Float16> {
  using type = float;
  static float load(Float16 v) { return half_to_float(v.bits); }
  static Float16 store(float v) { return Float16{float_to_half(v)}; }
};
template <>
struct Compute<BFloat16> {
  using type = float;
  static float load(BFloat16 v) { return bfloat16_to_float(v.bits); }
  static BFloat16 store(float v) { return BFloat16{float_to_bfloat16(v)}; }
};
template <class T>
using compute_t = typename Compute<T>::type;

template <class T>
constexpr bool is_float_storage_v =
    std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

template <class T>
struct TypeTag {
  using type = T;
};

// Dtype sets for dispatch.
enum class DTypeSet { kFloat, kNumeric, kSignedNumeric, kInteger, kAll, kBool };

inline bool dtype_in_set(DType t, DTypeSet set) {
  switch (t) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat64: return set != DTypeSet::kInteger && set != DTypeSet::kBool;
    case DType::kInt64:
    case DType::kInt32:
    case DType::kInt16:
    case DType::kInt8:
      return set == DTypeSet::kNumeric || set == DTypeSet::kSignedNumeric || set == DTypeSet::kInteger ||
             set == DTypeSet::kAll;
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32:
    case DType::kUInt64: return set == DTypeSet::kNumeric || set == DTypeSet::kInteger || set == DTypeSet::kAll;
    case DType::kBool: return set == DTypeSet::kAll || set == DTypeSet::kBool;
    default: return false;
  }
}

template <DTypeSet S, class T>
constexpr bool type_in_set() {
  constexpr bool is_f = is_float_storage_v<T>;
  constexpr bool is_b = std::is_same_v<T, bool>;
  constexpr bool is_u = std::is_unsigned_v<T> && !std::is_same_v<T, bool>;
  constexpr bool is_i = !is_f && !is_b;
  switch (S) {
    case DTypeSet::kFloat: return is_f;
    case DTypeSet::kNumeric: return is_f || is_i;
    case DTypeSet::kSignedNumeric: return is_f || (is_i && !is_u);
    case DTypeSet::kInteger: return is_i;
    case DTypeSet::kAll: return true;
    case DTypeSet::kBool: return is_b;
  }
  return false;
}

// Calls fn(TypeTag<StorageType>{}) for dtype t; only types of set S are instantiated. Throws kUnsupported naming
// `where` when t is not in S.
template <DTypeSet S, class Fn>
void dispatch_dtype(DType t, const std::string& where, Fn&& fn) {
  KILNRT_CHECK(dtype_in_set(t, S), kUnsupported, where, "dtype " << dtype_name(t) << " is not supported here");
  auto call = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (type_in_set<S, T>()) fn(tag);
  };
  switch (t) {
    case DType::kFloat32: call(TypeTag<float>{}); return;
    case DType::kFloat64: call(TypeTag<double>{}); return;
    case DType::kFloat16: call(TypeTag<Float16>{}); return;
    case DType::kBFloat16: call(TypeTag<BFloat16>{}); return;
    case DType::kInt64: call(TypeTag<int64_t>{}); return;
    case DType::kInt32: call(TypeTag<int32_t>{}); return;
    case DType::kInt8: call(TypeTag<int8_t>{}); return;
    case DType::kUInt8: call(TypeTag<uint8_t>{}); return;
    case DType::kInt16: call(TypeTag<int16_t>{}); return;
    case DType::kUInt16: call(TypeTag<uint16_t>{}); return;
    case DType::kUInt32: call(TypeTag<uint32_t>{}); return;
    case DType::kUInt64: call(TypeTag<uint64_t>{}); return;
    case DType::kBool: call(TypeTag<bool>{}); return;
    default: KILNRT_THROW(kUnsupported, where, "dtype " << dtype_name(t) << " is not supported");
  }
}

// Calls fn(TypeTag<T>{}) with an unsigned integer type of the given element size (1, 2, 4, 8): for kernels that
// only move elements (Transpose, Concat, Gather ...).
template <class Fn>
void dispatch_by_size(size_t elem_size, const std::string& where, Fn&& fn) {
  switch (elem_size) {
    case 1: fn(TypeTag<uint8_t>{}); return;
    case 2: fn(TypeTag<uint16_t>{}); return;
    case 4: fn(TypeTag<uint32_t>{}); return;
    case 8: fn(TypeTag<uint64_t>{}); return;
    default: KILNRT_THROW(kUnsupported, where, "element size " << elem_size << " is not supported");
  }
}

// Same-shape unary map: out[i] = store(f(load(in[i]))). Out may have another storage type (IsNaN -> bool).
template <class TIn, class TOut, class F>
void unary_map(const Tensor& in, Tensor& out, F f) {
  const TIn* x = in.data<TIn>();
  TOut* y = out.data<TOut>();
  parallel_for_range(in.numel(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = Compute<TOut>::store(f(Compute<TIn>::load(x[i])));
  });
}

// Broadcasting binary map: out = f(a, b) in compute types; out has the broadcast shape already.
template <class TA, class TB, class TOut, class F>
void binary_map(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TOut* po = out.data<TOut>();
  for_each_broadcast_row<2>(
      out.shape(), {&a.shape(), &b.shape()},
      [&](int64_t o, const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& st, int64_t n) {
        const TA* xa = pa + off[0];
        const TB* xb = pb + off[1];
        TOut* y = po + o;
        const int64_t sa = st[0], sb = st[1];
        for (int64_t j = 0; j < n; ++j)
          y[j] = Compute<TOut>::store(f(Compute<TA>::load(xa[j * sa]), Compute<TB>::load(xb[j * sb])));
      });
}

// Broadcasting ternary map (Where, Clip with tensor bounds).
template <class TA, class TB, class TC, class TOut, class F>
void ternary_map(const Tensor& a, const Tensor& b, const Tensor& c, Tensor& out, F f) {
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  const TC* pc = c.data<TC>();
  TOut* po = out.data<TOut>();
  for_each_broadcast_row<3>(
      out.shape(), {&a.shape(), &b.shape(), &c.shape()},
      [&](int64_t o, const std::array<int64_t, 3>& off, const std::array<int64_t, 3>& st, int64_t n) {
        for (int64_t j = 0; j < n; ++j)
          po[o + j] = Compute<TOut>::store(f(Compute<TA>::load(pa[off[0] + j * st[0]]),
                                             Compute<TB>::load(pb[off[1] + j * st[1]]),
                                             Compute<TC>::load(pc[off[2] + j * st[2]])));
      });
}

// Shape-function helpers for elementwise ops.
// Output 0 = input 0's type (dtype and shape); sym_value is not propagated.
void infer_same_as_input(ShapeContext& ctx);
// Output 0 = broadcast of all present inputs' shapes, with `dtype` (kUndefined: input 0's dtype).
void infer_broadcast(ShapeContext& ctx, DType dtype = DType::kUndefined);
// Checks that every present input has input 0's dtype (ONNX "T" constraint); throws naming the node.
void check_same_dtypes(const CpuContext& ctx, size_t first = 0, size_t count = SIZE_MAX);

}  // namespace kilnrt::ops
