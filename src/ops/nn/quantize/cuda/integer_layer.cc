// CUDA layers for the integer / quantized ops: DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
// ConvInteger, QLinearConv. Direct int32-accumulating kernels (integer.cu), exact against the CPU reference;
// scales and zero points are read by the kernels on the device. No cuBLASLt / cuDNN int8 paths yet.
#include "ops/cuda/cuda_layer.h"
#include "ops/nn/quantize/cuda/integer_kernels.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace m = kilnrt::cuda::kernels::integer;
using kilnrt::cuda::kernels::kMaxDims;

bool is8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

// Zero point of input `i` (absent: none) with `allowed` lengths besides 1 (0: per tensor only).
m::ZeroPoint zero_point(const LayerLaunch& l, size_t i, int64_t allowed, const std::string& node, const char* what) {
  m::ZeroPoint z;
  if (i >= l.inputs.size() || !l.inputs[i].present) return z;
  const LayerTensor& t = l.inputs[i];
  z.p = t.data;
  z.is_signed = t.dtype == DType::kInt8;
  z.len = t.numel();
  KILNRT_CHECK(z.len == 1 || (allowed > 1 && z.len == allowed), kInvalidArgument, node,
               what << " has " << z.len << " values (1" << (allowed > 1 ? " or " + std::to_string(allowed) : "")
                    << " expected)");
  return z;
}

const float* scalar_scale(const LayerTensor& t, const std::string& node, const char* what) {
  KILNRT_CHECK(t.numel() == 1, kUnsupported, node, what << " must be a single value, got " << t.numel());
  return static_cast<const float*>(t.data);
}

class DynamicQuantizeLayer final : public CudaLayer {
 public:
  explicit DynamicQuantizeLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:dynamic-quantize"; }
  void enqueue(LayerLaunch& l) override {
    KILNRT_CHECK(l.workspace_bytes >= 8, kInternal, name_, "no CUDA workspace for the scale scratch");
    auto* scratch = static_cast<unsigned char*>(l.workspace);
    const bool has_scale = l.outputs.size() > 1 && l.outputs[1].present;
    const bool has_zp = l.outputs.size() > 2 && l.outputs[2].present;
    float* scale = has_scale ? static_cast<float*>(l.outputs[1].data) : reinterpret_cast<float*>(scratch);
    uint8_t* zp = has_zp ? static_cast<uint8_t*>(l.outputs[2].data) : scratch + 4;
    check_launch(
        m::dynamic_quantize_f32(static_cast<const float*>(l.inputs[0].data), static_cast<uint8_t*>(l.outputs[0].data),
                                scale, zp, l.inputs[0].numel(), l.stream),
        name_, "dynamic_quantize");
  }

 private:
  std::string name_;
};

class MatMulIntegerLayer final : public CudaLayer {
 public:
  explicit MatMulIntegerLayer(const ir::Node& n) : name_(n.describe()), qlinear_(n.op_type == "QLinearMatMul") {}
  std::string tactic() const override { return qlinear_ ? "kernel:qlinear-matmul" : "kernel:matmul-integer"; }
  void enqueue(LayerLaunch& l) override {
    const size_t ia = 0, ib = qlinear_ ? 3 : 1, iaz = 2, ibz = qlinear_ ? 5 : 3;
    Shape as = l.inputs[ia].shape, bs = l.inputs[ib].shape;
    KILNRT_CHECK(!as.empty() && !bs.empty(), kInvalidArgument, name_, "matmul inputs must have rank >= 1");
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
    KILNRT_CHECK(
        bs[bs.size() - 2] == K, kInvalidArgument, name_,
        "inner dims differ: " << shape_to_string(l.inputs[ia].shape) << " x " << shape_to_string(l.inputs[ib].shape));
    const size_t ra = as.size() - 2, rb = bs.size() - 2, rank = std::max(ra, rb);
    KILNRT_CHECK(static_cast<int>(rank) <= kMaxDims, kUnsupported, name_, "batch rank " << rank << " is too large");
    m::MatBatch batch;
    batch.rank = static_cast<int>(rank);
    int64_t stride_a = 1, stride_b = 1;
    for (size_t d = rank; d-- > 0;) {  // right-aligned numpy broadcasting of the batch dims
      const int64_t da = d + ra >= rank ? as[d + ra - rank] : 1, db = d + rb >= rank ? bs[d + rb - rank] : 1;
      KILNRT_CHECK(da == db || da == 1 || db == 1, kInvalidArgument, name_,
                   "batch dims do not broadcast: " << shape_to_string(l.inputs[ia].shape) << " x "
                                                   << shape_to_string(l.inputs[ib].shape));
      batch.d[d] = std::max(da, db);
      batch.sa[d] = da == 1 ? 0 : stride_a;
      batch.sb[d] = db == 1 ? 0 : stride_b;
      stride_a *= da;
      stride_b *= db;
    }
    const m::ZeroPoint azp = zero_point(l, iaz, M, name_, "a_zero_point");
    const m::ZeroPoint bzp = zero_point(l, ibz, N, name_, "b_zero_point");
    m::Requant rq;
    if (qlinear_) {
      rq.enabled = true;
      rq.a_scale = scalar_scale(l.inputs[1], name_, "a_scale");
      rq.b_scale = scalar_scale(l.inputs[4], name_, "b_scale");
      rq.y_scale = scalar_scale(l.inputs[6], name_, "y_scale");
      rq.a_f16 = l.inputs[1].dtype == DType::kFloat16;
      rq.b_f16 = l.inputs[4].dtype == DType::kFloat16;
      rq.y_f16 = l.inputs[6].dtype == DType::kFloat16;
      KILNRT_CHECK(l.inputs[7].numel() == 1, kUnsupported, name_, "y_zero_point must be a single value");
      rq.y_zp = l.inputs[7].data;
      rq.y_signed = l.inputs[7].dtype == DType::kInt8;
    }
    check_launch(
        m::matmul_integer(l.inputs[ia].data, l.inputs[ia].dtype == DType::kInt8, azp, l.inputs[ib].data,
                          l.inputs[ib].dtype == DType::kInt8, bzp, l.outputs[0].data, batch, M, K, N, rq, l.stream),
        name_, "matmul_integer");
  }

 private:
  std::string name_;
  bool qlinear_;
};

class ConvIntegerLayer final : public CudaLayer {
 public:
  explicit ConvIntegerLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), qlinear_(n.op_type == "QLinearConv"), group_(n.attr_int("group", 1)) {}
  std::string tactic() const override { return qlinear_ ? "kernel:qlinear-conv-direct" : "kernel:conv-integer-direct"; }
  void enqueue(LayerLaunch& l) override {
    const size_t iw = qlinear_ ? 3 : 1, ixz = 2, iwz = qlinear_ ? 5 : 3;
    const Shape& xs = l.inputs[0].shape;
    const Shape& ws = l.inputs[iw].shape;
    const int nd = static_cast<int>(xs.size()) - 2;
    KILNRT_CHECK(
        nd >= 1 && nd <= 3 && ws.size() == xs.size(), kUnsupported, name_,
        "1-D to 3-D convolutions are supported (X " << shape_to_string(xs) << ", W " << shape_to_string(ws) << ")");
    KILNRT_CHECK(
        group_ >= 1 && xs[1] % group_ == 0 && ws[0] % group_ == 0 && ws[1] * group_ == xs[1], kInvalidArgument, name_,
        "channels do not match: X " << shape_to_string(xs) << ", W " << shape_to_string(ws) << ", group " << group_);
    const std::vector<int64_t> kshape(ws.begin() + 2, ws.end());
    ops::nn::SpatialParams p = ops::nn::read_spatial_params(node_, nd, kshape, false);
    const std::vector<int64_t> in_sp(xs.begin() + 2, xs.end());
    const std::vector<int64_t> out_sp = ops::nn::pooled_output_dims(p, in_sp, node_);
    const ops::nn::Geometry3 g3 = ops::nn::make_geometry3(p, in_sp, out_sp, node_);
    m::ConvGeom g;
    g.n = xs[0];
    g.c = xs[1];
    g.m = ws[0];
    g.group = group_;
    for (int i = 0; i < 3; ++i) {
      g.in[i] = g3.in[i];
      g.out[i] = g3.out[i];
      g.k[i] = g3.k[i];
      g.s[i] = g3.s[i];
      g.d[i] = g3.d[i];
      g.pad[i] = g3.pad_begin[i];
    }
    const m::ZeroPoint xzp = zero_point(l, ixz, 0, name_, "x_zero_point");
    const m::ZeroPoint wzp = zero_point(l, iwz, g.m, name_, "w_zero_point");
    m::Requant rq;
    const int32_t* bias = nullptr;
    if (qlinear_) {
      rq.enabled = true;
      rq.a_scale = scalar_scale(l.inputs[1], name_, "x_scale");
      rq.b_scale = static_cast<const float*>(l.inputs[4].data);
      rq.b_scale_len = l.inputs[4].numel();
      KILNRT_CHECK(rq.b_scale_len == 1 || rq.b_scale_len == g.m, kInvalidArgument, name_,
                   "w_scale has " << rq.b_scale_len << " values for " << g.m << " output channels");
      rq.y_scale = scalar_scale(l.inputs[6], name_, "y_scale");
      KILNRT_CHECK(l.inputs[7].numel() == 1, kUnsupported, name_, "y_zero_point must be a single value");
      rq.y_zp = l.inputs[7].data;
      rq.y_signed = l.inputs[7].dtype == DType::kInt8;
      if (l.inputs.size() > 8 && l.inputs[8].present) {
        KILNRT_CHECK(l.inputs[8].numel() == g.m, kInvalidArgument, name_,
                     "B has " << l.inputs[8].numel() << " values for " << g.m << " output channels");
        bias = static_cast<const int32_t*>(l.inputs[8].data);
      }
    }
    check_launch(m::conv_integer(l.inputs[0].data, l.inputs[0].dtype == DType::kInt8, xzp, l.inputs[iw].data,
                                 l.inputs[iw].dtype == DType::kInt8, wzp, bias, l.outputs[0].data, g, rq, l.stream),
                 name_, "conv_integer");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool qlinear_;
  int64_t group_;
};

// Checks the 8-bit data inputs, float32 scales and 8-bit zero points of a node; "" when supported.
std::string check_io(const ir::Node& n, const ir::Graph& g, std::initializer_list<size_t> eight_bit,
                     std::initializer_list<size_t> scales) {
  for (size_t i : eight_bit)
    if (i < n.inputs.size() && !n.inputs[i].empty() && !is8(value_dtype(g, n.inputs[i])))
      return "input " + std::to_string(i) + " must be int8 / uint8";
  for (size_t i : scales)
    if (i < n.inputs.size() && !n.inputs[i].empty() && value_dtype(g, n.inputs[i]) != DType::kFloat32)
      return "scale input " + std::to_string(i) + " must be float32";
  return "";
}

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"DynamicQuantizeLinear"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      return value_dtype(g, n.inputs.at(0)) == DType::kFloat32 ? "" : "the CUDA layer takes float32";
    },
    factory<DynamicQuantizeLayer>());
KILNRT_REGISTER_CUDA_LAYER(
    {"MatMulInteger"},
    [](const ir::Node& n, const ir::Graph& g) {
      return check_io(n, g, {0, 1, 2, 3}, {});
    },
    factory<MatMulIntegerLayer>());
KILNRT_REGISTER_CUDA_LAYER(
    {"QLinearMatMul"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      std::string why = check_io(n, g, {0, 2, 3, 5, 7}, {});
      for (size_t i : {1, 4, 6})  // float32 or float16 scales (the kernel reads either)
        if (why.empty() && i < n.inputs.size() && !n.inputs[i].empty() &&
            !dtype_is_one_of(value_dtype(g, n.inputs[i]), {DType::kFloat32, DType::kFloat16}))
          why = "scale input " + std::to_string(i) + " must be float32 / float16";
      return why;
    },
    factory<MatMulIntegerLayer>());
KILNRT_REGISTER_CUDA_LAYER(
    {"ConvInteger"},
    [](const ir::Node& n, const ir::Graph& g) {
      return check_io(n, g, {0, 1, 2, 3}, {});
    },
    factory<ConvIntegerLayer>());
KILNRT_REGISTER_CUDA_LAYER(
    {"QLinearConv"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      std::string why = check_io(n, g, {0, 2, 3, 5, 7}, {1, 4, 6});
      if (why.empty() && n.inputs.size() > 8 && !n.inputs[8].empty() && value_dtype(g, n.inputs[8]) != DType::kInt32)
        why = "B must be int32";
      return why;
    },
    factory<ConvIntegerLayer>());

}  // namespace kilnrt::backends::cuda
