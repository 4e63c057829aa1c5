// CUDA layers for CPU parity (part 1): float32 math unary (Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh,
// Atanh, Shrink), IsNaN / IsInf / Not, Mean, ArgMax / ArgMin, Hardmax, Trilu, CumSum, GatherElements, GatherND,
// ScatterElements (and the legacy Scatter), ScatterND, TopK, Bitwise* / BitShift. Kernels: kernels/extra.cu.
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "backends/cuda/kernels/extra_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;
namespace x = kilnrt::cuda::kernels::extra;

std::string dtype_in(const ir::Node& n, const ir::Graph& g, size_t input, std::initializer_list<DType> ok) {
  if (n.inputs.size() <= input || n.inputs[input].empty()) return "missing input";
  const DType t = value_dtype(g, n.inputs[input]);
  for (DType o : ok)
    if (t == o) return "";
  return std::string("dtype ") + dtype_name(t) + " of input " + std::to_string(input) + " (no CUDA kernel)";
}

x::Dims to_dims(const Shape& s, const std::string& name) {
  KILNRT_CHECK(s.size() <= static_cast<size_t>(k::kMaxDims), kUnsupported, name,
               "rank " << s.size() << " exceeds the CUDA backend's limit of " << k::kMaxDims);
  x::Dims d;
  d.rank = static_cast<int>(s.size());
  for (size_t i = 0; i < s.size(); ++i) d.d[i] = s[i];
  return d;
}

void device_copy(void* dst, const void* src, int64_t n, size_t elem, StreamT stream, const std::string& name) {
  if (n <= 0 || dst == src) return;
  k::Strided s;
  s.rank = 1;
  s.dims[0] = n;
  s.out_strides[0] = s.in_strides[0] = 1;
  check_launch(k::strided_copy(dst, src, s, elem, stream), name, "strided_copy");
}

// [outer, axis dim, inner] split of `s` at `axis`.
void split3(const Shape& s, int axis, int64_t* outer, int64_t* mid, int64_t* inner) {
  *outer = *inner = 1;
  for (int d = 0; d < axis; ++d) *outer *= s[d];
  *mid = s[axis];
  for (size_t d = axis + 1; d < s.size(); ++d) *inner *= s[d];
}

// ---- unary -------------------------------------------------------------------------------------------------------
x::XUnary xunary_of(const std::string& op) {
  static const std::map<std::string, x::XUnary> ops = {
      {"Tan", x::XUnary::kTan},     {"Asin", x::XUnary::kAsin},   {"Acos", x::XUnary::kAcos},
      {"Atan", x::XUnary::kAtan},   {"Sinh", x::XUnary::kSinh},   {"Cosh", x::XUnary::kCosh},
      {"Asinh", x::XUnary::kAsinh}, {"Acosh", x::XUnary::kAcosh}, {"Atanh", x::XUnary::kAtanh},
      {"Shrink", x::XUnary::kShrink}, {"IsNaN", x::XUnary::kIsNaN}, {"IsInf", x::XUnary::kIsInf},
      {"Not", x::XUnary::kNot}};
  return ops.at(op);
}

class XUnaryLayer final : public CudaLayer {
 public:
  explicit XUnaryLayer(const ir::Node& n) : name_(n.describe()), op_(xunary_of(n.op_type)) {
    if (op_ == x::XUnary::kShrink) {
      a_ = n.attr_float("lambd", 0.5f);
      b_ = n.attr_float("bias", 0.0f);
    } else if (op_ == x::XUnary::kIsInf) {
      a_ = n.attr_int("detect_positive", 1) != 0 ? 1.f : 0.f;
      b_ = n.attr_int("detect_negative", 1) != 0 ? 1.f : 0.f;
    }
  }
  std::string tactic() const override { return "kernel:extra-unary"; }
  void enqueue(LayerLaunch& l) override {
    const DType t = l.inputs[0].dtype;
    if (t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat64) {  // IsNaN / IsInf
      const int code = t == DType::kFloat16 ? 4 : t == DType::kBFloat16 ? 5 : 12;
      check_launch(kilnrt::cuda::kernels::nan_inf(code, l.inputs[0].data, static_cast<uint8_t*>(l.outputs[0].data),
                                                  l.outputs[0].numel(), op_ == x::XUnary::kIsNaN, a_ != 0.f, b_ != 0.f,
                                                  l.stream),
                   name_, "nan_inf");
      return;
    }
    check_launch(x::xunary(op_, l.inputs[0].data, l.outputs[0].data, l.outputs[0].numel(), a_, b_, l.stream), name_,
                 "xunary");
  }

 private:
  std::string name_;
  x::XUnary op_;
  float a_ = 0.f, b_ = 0.f;
};

// ---- Mean: chained broadcasting Add, then a scale by 1/N ------------------------------------------------------------
class MeanLayer final : public CudaLayer {
 public:
  explicit MeanLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:binary+scale"; }
  void enqueue(LayerLaunch& l) override {
    LayerOutput& y = l.outputs[0];
    const void* src = l.inputs[0].data;
    Shape a_shape = l.inputs[0].shape;
    for (size_t i = 1; i < l.inputs.size(); ++i) {
      const k::Broadcast3 bc = make_broadcast(y.shape, {y.shape, a_shape, l.inputs[i].shape});
      check_launch(k::binary(k::BinaryOp::kAdd, 0, src, l.inputs[i].data, y.data, y.numel(), bc, l.stream), name_,
                   "binary");
      src = y.data;
      a_shape = y.shape;
    }
    const float scale = 1.f / static_cast<float>(l.inputs.size());
    check_launch(x::xunary(x::XUnary::kScale, src, y.data, y.numel(), scale, 0.f, l.stream), name_, "xunary");
  }

 private:
  std::string name_;
};

// ---- ArgMax / ArgMin / Hardmax ---------------------------------------------------------------------------------------
class ArgLayer final : public CudaLayer {
 public:
  explicit ArgLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), is_max_(n.op_type == "ArgMax"),
        last_(n.attr_int("select_last_index", 0) != 0) {}
  std::string tactic() const override { return "kernel:arg-reduce"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", 0), xs.size(), node_));
    int64_t outer, r, inner;
    split3(xs, axis, &outer, &r, &inner);
    KILNRT_CHECK(r > 0 || outer * inner == 0, kInvalidArgument, name_, "reduction over an empty axis");
    check_launch(x::arg_reduce_f32(static_cast<const float*>(l.inputs[0].data), static_cast<int64_t*>(l.outputs[0].data),
                                   outer, r, inner, is_max_, last_, l.stream),
                 name_, "arg_reduce");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool is_max_, last_;
};

class HardmaxLayer final : public CudaLayer {
 public:
  HardmaxLayer(const ir::Node& n, int64_t opset) : node_(n), name_(n.describe()), opset_(opset) {}
  std::string tactic() const override { return "kernel:hardmax"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int axis =
        static_cast<int>(ops::normalize_axis(node_.attr_int("axis", opset_ < 13 ? 1 : -1), xs.size(), node_));
    int64_t outer, n, inner;
    split3(xs, axis, &outer, &n, &inner);
    if (opset_ < 13) {  // coerced to 2-D [prod(dims before axis), prod(dims from axis)]
      n *= inner;
      inner = 1;
    }
    check_launch(x::hardmax_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(l.outputs[0].data),
                                outer, n, inner, l.stream),
                 name_, "hardmax");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t opset_;
};

// ---- Trilu / CumSum --------------------------------------------------------------------------------------------------
class TriluLayer final : public CudaLayer {
 public:
  explicit TriluLayer(const ir::Node& n) : name_(n.describe()), upper_(n.attr_int("upper", 1) != 0) {}
  std::string tactic() const override { return "kernel:trilu"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(xs.size() >= 2, kInvalidArgument, name_, "Trilu needs rank >= 2");
    const int64_t rows = xs[xs.size() - 2], cols = xs.back();
    if (rows * cols == 0) return;
    const bool has_k = l.inputs.size() > 1 && l.inputs[1].present;
    check_launch(x::trilu(l.inputs[0].data, l.outputs[0].data,
                          has_k ? static_cast<const int64_t*>(l.inputs[1].data) : nullptr,
                          l.inputs[0].numel() / (rows * cols), rows, cols, upper_, dtype_size(l.inputs[0].dtype),
                          l.stream),
                 name_, "trilu");
  }

 private:
  std::string name_;
  bool upper_;
};

int cumsum_code(DType t) {
  switch (t) {
    case DType::kFloat32: return 0;
    case DType::kInt64: return 1;
    case DType::kInt32: return 2;
    case DType::kFloat64: return 6;
    default: return -1;
  }
}

class CumSumLayer final : public CudaLayer {
 public:
  explicit CumSumLayer(const ir::Node& n)
      : name_(n.describe()), exclusive_(n.attr_int("exclusive", 0) != 0), reverse_(n.attr_int("reverse", 0) != 0) {}
  std::string tactic() const override { return "kernel:cumsum"; }
  void enqueue(LayerLaunch& l) override {
    // The axis stays on the device: the kernel reads it (no host read, graph-capture safe).
    check_launch(x::cumsum(l.inputs[0].data, l.outputs[0].data, l.inputs[1].data,
                           l.inputs[1].dtype == DType::kInt64, to_dims(l.inputs[0].shape, name_), exclusive_, reverse_,
                           cumsum_code(l.inputs[0].dtype), l.stream),
                 name_, "cumsum");
  }

 private:
  std::string name_;
  bool exclusive_, reverse_;
};

// ---- Gather / Scatter ------------------------------------------------------------------------------------------------
class GatherElementsLayer final : public CudaLayer {
 public:
  explicit GatherElementsLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:gather-elements"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", 0), xs.size(), node_));
    check_launch(x::gather_elements(l.inputs[0].data, to_dims(xs, name_), l.inputs[1].data,
                                    l.inputs[1].dtype == DType::kInt64, to_dims(l.inputs[1].shape, name_), axis,
                                    l.outputs[0].data, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "gather_elements");
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

int reduction_code(const ir::Node& n) {
  const std::string r = n.attr_string("reduction", std::string("none"));
  if (r == "add") return 1;
  if (r == "mul") return 2;
  if (r == "max") return 3;
  if (r == "min") return 4;
  return 0;
}

class ScatterElementsLayer final : public CudaLayer {
 public:
  explicit ScatterElementsLayer(const ir::Node& n) : node_(n), name_(n.describe()), red_(reduction_code(n)) {}
  std::string tactic() const override { return "kernel:scatter-elements"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& d = l.inputs[0];
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", 0), d.shape.size(), node_));
    device_copy(l.outputs[0].data, d.data, d.numel(), dtype_size(d.dtype), l.stream, name_);
    check_launch(x::scatter_elements(l.outputs[0].data, to_dims(d.shape, name_), l.inputs[1].data,
                                     l.inputs[1].dtype == DType::kInt64, l.inputs[2].data,
                                     to_dims(l.inputs[2].shape, name_), axis, red_,
                                     d.dtype == DType::kFloat32 ? 0 : 1, l.stream),
                 name_, "scatter_elements");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int red_;
};

class ScatterNDLayer final : public CudaLayer {
 public:
  explicit ScatterNDLayer(const ir::Node& n) : name_(n.describe()), red_(reduction_code(n)) {}
  std::string tactic() const override { return "kernel:scatter-nd"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& d = l.inputs[0];
    const Shape& is = l.inputs[1].shape;
    KILNRT_CHECK(!is.empty(), kInvalidArgument, name_, "indices must have rank >= 1");
    const int kk = static_cast<int>(is.back());
    KILNRT_CHECK(kk >= 0 && kk <= static_cast<int>(d.shape.size()), kInvalidArgument, name_,
                 "index tuples of length " << kk << " for data of rank " << d.shape.size());
    int64_t slice = 1;
    for (size_t i = kk; i < d.shape.size(); ++i) slice *= d.shape[i];
    const int64_t n_upd = kk > 0 ? l.inputs[1].numel() / kk : 0;
    device_copy(l.outputs[0].data, d.data, d.numel(), dtype_size(d.dtype), l.stream, name_);
    check_launch(x::scatter_nd(l.outputs[0].data, to_dims(d.shape, name_), static_cast<const int64_t*>(l.inputs[1].data),
                               n_upd, kk, l.inputs[2].data, slice, red_, d.dtype == DType::kFloat32 ? 0 : 1, l.stream),
                 name_, "scatter_nd");
  }

 private:
  std::string name_;
  int red_;
};

class GatherNDLayer final : public CudaLayer {
 public:
  explicit GatherNDLayer(const ir::Node& n) : name_(n.describe()), batch_dims_(static_cast<int>(n.attr_int("batch_dims", 0))) {}
  std::string tactic() const override { return "kernel:gather-nd"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& ds = l.inputs[0].shape;
    const Shape& is = l.inputs[1].shape;
    KILNRT_CHECK(!is.empty() && batch_dims_ >= 0 && batch_dims_ < static_cast<int>(is.size()), kInvalidArgument, name_,
                 "indices rank / batch_dims");
    const int kk = static_cast<int>(is.back());
    KILNRT_CHECK(kk >= 1 && batch_dims_ + kk <= static_cast<int>(ds.size()), kInvalidArgument, name_,
                 "index tuples of length " << kk << " for data of rank " << ds.size());
    int64_t slice = 1, n_batch = 1;
    for (size_t i = batch_dims_ + kk; i < ds.size(); ++i) slice *= ds[i];
    for (int i = 0; i < batch_dims_; ++i) n_batch *= is[i];
    check_launch(x::gather_nd(l.inputs[0].data, to_dims(ds, name_), static_cast<const int64_t*>(l.inputs[1].data),
                              l.inputs[1].numel() / kk, kk, batch_dims_, n_batch, slice, l.outputs[0].data,
                              dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "gather_nd");
  }

 private:
  std::string name_;
  int batch_dims_;
};

// ---- TopK (k read on the host: a constant or a shape computation) ---------------------------------------------------
class TopKLayer final : public CudaLayer {
 public:
  TopKLayer(const ir::Node& n, int64_t opset)
      : node_(n), name_(n.describe()), opset_(opset), largest_(n.attr_int("largest", 1) != 0) {}
  std::string tactic() const override { return "kernel:topk-rank"; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", -1), xs.size(), node_));
    int64_t outer, n, inner;
    split3(xs, axis, &outer, &n, &inner);
    const int64_t kk = l.outputs[0].shape[axis];  // inference applied k (checked against the axis there)
    KILNRT_CHECK(kk >= 0 && kk <= n, kInvalidArgument, name_, "k = " << kk << " for an axis of " << n);
    const DType xt = l.inputs[0].dtype;  // float32, or int32 / int64 / uint64 (kernels::topk_int)
    const size_t es = dtype_size(xt);
    void* values = l.outputs[0].data;
    int64_t* indices = l.outputs.size() > 1 ? static_cast<int64_t*>(l.outputs[1].data) : nullptr;
    const bool need_scratch = !values || !indices || !l.outputs[0].present || l.outputs.size() < 2 ||
                              !l.outputs[1].present;
    if (need_scratch) {  // an omitted output: write it into the workspace
      const size_t bytes = static_cast<size_t>(outer * kk * inner) * (es + sizeof(int64_t));
      KILNRT_CHECK(bytes <= l.workspace_bytes, kUnsupported, name_, "TopK scratch exceeds the CUDA workspace");
      char* ws = static_cast<char*>(l.workspace);
      if (!l.outputs[0].present || !values) values = ws + outer * kk * inner * sizeof(int64_t);
      if (l.outputs.size() < 2 || !l.outputs[1].present || !indices) indices = reinterpret_cast<int64_t*>(ws);
    }
    if (xt != DType::kFloat32) {
      const int code = xt == DType::kInt64 ? 1 : xt == DType::kInt32 ? 2 : 11;
      check_launch(kilnrt::cuda::kernels::topk_int(code, l.inputs[0].data, values, indices, outer, n, inner, kk,
                                                   largest_, l.stream),
                   name_, "topk");
      return;
    }
    check_launch(x::topk_f32(static_cast<const float*>(l.inputs[0].data), static_cast<float*>(values), indices, outer,
                             n, inner, kk, largest_, l.stream),
                 name_, "topk");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  int64_t opset_;
  bool largest_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

std::string sized(const ir::Node& n, const ir::Graph& g, size_t input = 0) {
  if (n.inputs.size() <= input) return "missing input";
  const size_t sz = dtype_size(value_dtype(g, n.inputs[input]));
  return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
}

struct Register {
  Register() {
    auto& r = LayerRegistry::instance();
    for (const char* op : {"Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Shrink"})
      r.add({op, [](const ir::Node& n, const ir::Graph& g) { return dtype_in(n, g, 0, {DType::kFloat32}); },
             factory<XUnaryLayer>()});
    for (const char* op : {"IsNaN", "IsInf"})  // 16-bit / float64: kernels::nan_inf
      r.add({op,
             [](const ir::Node& n, const ir::Graph& g) {
               return dtype_in(n, g, 0, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64});
             },
             factory<XUnaryLayer>()});
    r.add({"Not", [](const ir::Node& n, const ir::Graph& g) { return dtype_in(n, g, 0, {DType::kBool}); },
           factory<XUnaryLayer>()});
    r.add({"Mean",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             for (size_t i = 0; i < n.inputs.size(); ++i)
               if (std::string e = dtype_in(n, g, i, {DType::kFloat32}); !e.empty()) return e;
             return n.inputs.empty() ? "needs inputs" : "";
           },
           factory<MeanLayer>()});
    for (const char* op : {"ArgMax", "ArgMin"})
      r.add({op, [](const ir::Node& n, const ir::Graph& g) { return dtype_in(n, g, 0, {DType::kFloat32}); },
             factory<ArgLayer>()});
    r.add({"Hardmax", [](const ir::Node& n, const ir::Graph& g) { return dtype_in(n, g, 0, {DType::kFloat32}); },
           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
             return std::make_unique<HardmaxLayer>(a.node, a.opset);
           }});
    r.add({"Trilu",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (n.inputs.size() > 1 && !n.inputs[1].empty())
               if (std::string e = dtype_in(n, g, 1, {DType::kInt64}); !e.empty()) return e;
             return sized(n, g);
           },
           factory<TriluLayer>()});
    r.add({"CumSum",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (std::string e = dtype_in(n, g, 1, {DType::kInt64, DType::kInt32}); !e.empty()) return e;
             return dtype_in(n, g, 0, {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kInt32});
           },
           factory<CumSumLayer>()});
    r.add({"GatherElements",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (std::string e = dtype_in(n, g, 1, {DType::kInt64, DType::kInt32}); !e.empty()) return e;
             return sized(n, g);
           },
           factory<GatherElementsLayer>()});
    for (const char* op : {"ScatterElements", "Scatter"})
      r.add({op,
             [](const ir::Node& n, const ir::Graph& g) -> std::string {
               if (std::string e = dtype_in(n, g, 1, {DType::kInt64, DType::kInt32}); !e.empty()) return e;
               if (std::string e = dtype_in(n, g, 2, {DType::kFloat32, DType::kInt64}); !e.empty()) return e;
               return dtype_in(n, g, 0, {DType::kFloat32, DType::kInt64});
             },
             factory<ScatterElementsLayer>()});
    r.add({"ScatterND",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (std::string e = dtype_in(n, g, 1, {DType::kInt64}); !e.empty()) return e;
             if (std::string e = dtype_in(n, g, 2, {DType::kFloat32, DType::kInt64}); !e.empty()) return e;
             return dtype_in(n, g, 0, {DType::kFloat32, DType::kInt64});
           },
           factory<ScatterNDLayer>()});
    r.add({"GatherND",
           [](const ir::Node& n, const ir::Graph& g) -> std::string {
             if (std::string e = dtype_in(n, g, 1, {DType::kInt64}); !e.empty()) return e;
             return sized(n, g);
           },
           factory<GatherNDLayer>()});
    r.add({"TopK",
           [](const ir::Node& n, const ir::Graph& g) {
             return dtype_in(n, g, 0, {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kUInt64});
           },
           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
             return std::make_unique<TopKLayer>(a.node, a.opset);
           }});
    // Bitwise* / BitShift: layers_bits.cc (signed shifts of opset 28 follow the CPU reference there).
  }
};
const Register kRegister;

}  // namespace
}  // namespace kilnrt::backends::cuda
