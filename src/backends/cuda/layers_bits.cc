// CUDA layers for the onnx 1.23 bit ops and small gaps: BitwiseAnd / Or / Xor (broadcasting),
// BitwiseNot, BitShift on signed (opset 28) and unsigned integers, BitCast (a byte copy), OptionalGetElement /
// OptionalHasElement on plain tensors, ReduceMax / ReduceMin of bool tensors (handed over by layers_nn.cc).
// Kernels: kernels/bits.cu, with the arithmetic of the CPU reference (src/ops/math/binary/binary.cc, unary.cc, cast.cc,
// src/ops/shape/optional_ops/optional_ops.cc, src/ops/reduce/reductions/reductions.cc).
#include "backends/cuda/layers_bits.h"

#include <algorithm>

#include "backends/cuda/kernels/bits.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {

namespace bk = kilnrt::cuda::kernels::bits;

int bits_int_code(DType t, IntCodes accepted) {
  const bool all = accepted == IntCodes::kAll;
  switch (t) {
    case DType::kInt8: return bk::kI8;
    case DType::kUInt8: return bk::kU8;
    case DType::kInt16: return bk::kI16;
    case DType::kUInt16: return bk::kU16;
    case DType::kInt32: return bk::kI32;
    case DType::kUInt32: return all ? bk::kU32 : -1;
    case DType::kInt64: return all ? bk::kI64 : -1;
    case DType::kUInt64: return all ? bk::kU64 : -1;
    default: return -1;
  }
}

namespace {

bool is_unsigned(DType t) {
  return dtype_is_one_of(t, {DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64});
}

// ---- BitwiseAnd / Or / Xor, BitShift ----------------------------------------------------------------------------
class BitBinaryLayer final : public CudaLayer {
 public:
  explicit BitBinaryLayer(const ir::Node& n) : name_(n.describe()) {
    const std::string& op = n.op_type;
    op_ = op == "BitwiseAnd" ? 0 : op == "BitwiseOr" ? 1 : op == "BitwiseXor" ? 2 : 3;
    if (op == "BitShift" && n.attr_string("direction") == "RIGHT") op_ = 4;
  }
  std::string tactic() const override { return "kernel:bits-binary"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& a = l.inputs.at(0);
    const LayerTensor& b = l.inputs.at(1);
    LayerOutput& y = l.outputs.at(0);
    const int code = bits_int_code(a.dtype);
    KILNRT_CHECK(code >= 0 && a.dtype == b.dtype && y.dtype == a.dtype, kUnsupported, name_,
                 "inputs must be of one integer dtype, got " << dtype_name(a.dtype) << " and " << dtype_name(b.dtype));
    if (y.numel() == 0) return;
    const kilnrt::cuda::kernels::Broadcast3 bc = make_broadcast(y.shape, {y.shape, a.shape, b.shape});
    check_launch(bk::bit_binary(op_, code, a.data, b.data, y.data, y.numel(), bc, l.stream), name_, "bit_binary");
  }

 private:
  std::string name_;
  int op_ = 0;
};

class BitNotLayer final : public CudaLayer {
 public:
  explicit BitNotLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:bits-not"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    KILNRT_CHECK(bits_int_code(x.dtype) >= 0, kUnsupported, name_,
                 "dtype " << dtype_name(x.dtype) << " is not an integer");
    check_launch(bk::bit_not(x.data, l.outputs.at(0).data, x.numel(), dtype_size(x.dtype), l.stream), name_,
                 "bit_not");
  }

 private:
  std::string name_;
};

// ---- BitCast: the bytes copied into the output of the new dtype ---------------------------------------------------
class BitCastLayer final : public CudaLayer {
 public:
  explicit BitCastLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:bitcast-copy"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    LayerOutput& y = l.outputs.at(0);
    KILNRT_CHECK(dtype_size(x.dtype) == dtype_size(y.dtype) && x.numel() == y.numel(), kInternal, name_,
                 "BitCast " << dtype_name(x.dtype) << " " << shape_to_string(x.shape) << " -> " << dtype_name(y.dtype)
                            << " " << shape_to_string(y.shape) << " changes the byte count");
    check_launch(bk::copy_bytes(y.data, x.data, x.numel() * dtype_size(x.dtype), l.stream), name_, "copy_bytes");
  }

 private:
  std::string name_;
};

// ---- OptionalGetElement (a view of its input) / OptionalHasElement ------------------------------------------------
class OptionalGetLayer final : public CudaLayer {
 public:
  std::string tactic() const override { return "alias"; }
  bool supports_16bit() const override { return true; }
  bool is_alias() const override { return true; }
  void enqueue(LayerLaunch&) override {}
};

class OptionalHasLayer final : public CudaLayer {
 public:
  explicit OptionalHasLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:optional-has-element"; }
  bool supports_16bit() const override { return true; }  // writes a bool; reads nothing
  void enqueue(LayerLaunch& l) override {
    const bool present = !l.inputs.empty() && l.inputs[0].present;
    check_launch(bk::fill_bool(static_cast<bool*>(l.outputs.at(0).data), present, l.stream), name_, "fill_bool");
  }

 private:
  std::string name_;
};

// ---- ReduceMax / ReduceMin of bool: any / all ---------------------------------------------------------------------
class ReduceBoolLayer final : public CudaLayer {
 public:
  explicit ReduceBoolLayer(const ir::Node& n) : node_(n), name_(n.describe()), is_max_(n.op_type == "ReduceMax") {}
  std::string tactic() const override { return "kernel:reduce-bool"; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    LayerOutput& y = l.outputs.at(0);
    KILNRT_CHECK(x.dtype == DType::kBool, kUnsupported, name_, "expected bool, got " << dtype_name(x.dtype));
    const int rank = static_cast<int>(x.shape.size());
    KILNRT_CHECK(rank <= kilnrt::cuda::kernels::kMaxDims, kUnsupported, name_,
                 "rank " << rank << " exceeds " << kilnrt::cuda::kernels::kMaxDims);
    std::vector<int64_t> axes;
    if (l.inputs.size() > 1 && l.inputs[1].present) {
      KILNRT_CHECK(l.inputs[1].host != nullptr, kInternal, name_, "axes' host value is missing");
      axes = ops::tensor_to_int64s(*l.inputs[1].host);
    } else if (node_.has_attr("axes")) {
      axes = node_.attr_ints("axes");
    }
    std::vector<bool> reduced(rank, false);
    if (axes.empty()) {
      if (node_.attr_int("noop_with_empty_axes", 0) != 0) {  // identity (the CPU reference returns X)
        check_launch(bk::copy_bytes(y.data, x.data, static_cast<size_t>(x.numel()), l.stream), name_, "copy_bytes");
        return;
      }
      std::fill(reduced.begin(), reduced.end(), true);
    }
    for (int64_t a : axes) reduced[ops::normalize_axis(a, rank, node_)] = true;
    bk::ReduceBool p;
    p.is_max = is_max_;
    std::vector<int64_t> strides(rank, 1);
    for (int d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * x.shape[d + 1];
    p.n_out = 1;
    for (int d = 0; d < rank; ++d) {
      if (reduced[d]) {
        p.red_dims[p.red_rank] = x.shape[d];
        p.red_strides[p.red_rank++] = strides[d];
        p.n_red *= x.shape[d];
      } else {
        p.kept_dims[p.kept_rank] = x.shape[d];
        p.kept_strides[p.kept_rank++] = strides[d];
        p.n_out *= x.shape[d];
      }
    }
    KILNRT_CHECK(p.n_out == y.numel(), kInternal, name_,
                 "output has " << y.numel() << " values, the reduction gives " << p.n_out);
    check_launch(bk::reduce_bool(p, static_cast<const uint8_t*>(x.data), static_cast<uint8_t*>(y.data), l.stream),
                 name_, "reduce_bool");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool is_max_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

std::string integer_inputs(const ir::Node& n, const ir::Graph& g, size_t count) {
  if (n.inputs.size() < count) return "needs " + std::to_string(count) + " inputs";
  const DType t0 = value_dtype(g, n.inputs[0]);
  for (size_t i = 0; i < count; ++i) {
    const DType t = value_dtype(g, n.inputs[i]);
    if (bits_int_code(t) < 0) return std::string("dtype ") + dtype_name(t) + " of input " + std::to_string(i) +
                                " (the CUDA layer takes integers)";
    if (t != t0) return "mixed input dtypes";
  }
  return "";
}

struct Register {
  Register() {
    auto& r = LayerRegistry::instance();
    for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
      r.add({op, [](const ir::Node& n, const ir::Graph& g) { return integer_inputs(n, g, 2); },
             factory<BitBinaryLayer>()});
    r.add({"BitShift",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (std::string e = integer_inputs(n, g, 2); !e.empty()) return e;
             const std::string dir = n.attr_string("direction");
             if (dir != "LEFT" && dir != "RIGHT") return "direction must be LEFT or RIGHT";
             if (g.opset(n.domain) < 28 && !is_unsigned(value_dtype(g, n.inputs[0])))
               return "signed integers before opset 28";
             return "";
           },
           factory<BitBinaryLayer>()});
    r.add({"BitwiseNot", [](const ir::Node& n, const ir::Graph& g) { return integer_inputs(n, g, 1); },
           factory<BitNotLayer>()});
    r.add({"BitCast",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (n.inputs.empty() || n.outputs.empty()) return "needs one input and one output";
             const DType in = value_dtype(g, n.inputs[0]), out = value_dtype(g, n.outputs[0]);
             if (in == DType::kUndefined || out == DType::kUndefined) return "unknown dtype";
             if (dtype_size(in) != dtype_size(out) || dtype_size(in) == 0)
               return std::string("dtypes of different widths: ") + dtype_name(in) + " -> " + dtype_name(out);
             return "";
           },
           factory<BitCastLayer>()});
    r.add({"OptionalGetElement",
           [](const ir::Node& n, const ir::Graph&) -> std::string {
             if (n.inputs.empty() || n.inputs[0].empty()) return "an empty optional (the input is omitted)";
             return "";
           },
           [](const LayerCreateArgs&) -> std::unique_ptr<CudaLayer> { return std::make_unique<OptionalGetLayer>(); }});
    r.add({"OptionalHasElement", [](const ir::Node&, const ir::Graph&) { return std::string(); },
           factory<OptionalHasLayer>()});
  }
};
const Register kRegister;

}  // namespace

bool reduce_is_bool(const ir::Node& n, const ir::Graph& g) {
  return (n.op_type == "ReduceMax" || n.op_type == "ReduceMin") && !n.inputs.empty() &&
         value_dtype(g, n.inputs[0]) == DType::kBool;
}

std::string reduce_bool_supports(const ir::Node& n, const ir::Graph& g) {
  if (n.inputs.size() > 1 && !n.inputs[1].empty() && value_dtype(g, n.inputs[1]) != DType::kInt64)
    return "axes must be int64";
  return "";
}

std::unique_ptr<CudaLayer> make_reduce_bool(const LayerCreateArgs& a) { return std::make_unique<ReduceBoolLayer>(a.node); }

}  // namespace kilnrt::backends::cuda
