// The CUDA layer of CumProd (exclusive / reverse, axis on the device, float32 / float64 / int32 / int64), on the kernel
// of cumprod_kernels.h in the CPU reference's arithmetic.
#include <algorithm>
#include <cmath>
#include <string>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/float32_kernel_io.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/reduce/arg_cumsum/cuda/cumprod_kernels.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

using namespace float32_kernel_io;
namespace la = kilnrt::cuda::kernels::linatt;

// ---- CumProd
// ----------------------------------------------------------------------------------------------------------
int cumprod_code(DType t) {
  switch (t) {
    case DType::kFloat32: return 0;
    case DType::kInt64: return 1;
    case DType::kInt32: return 2;
    case DType::kFloat64: return 6;
    default: return -1;
  }
}

class CumProdLayer final : public CudaLayer {
 public:
  explicit CumProdLayer(const ir::Node& n)
      : node_(n),
        name_(n.describe()),
        exclusive_(n.attr_int("exclusive", 0) != 0),
        reverse_(n.attr_int("reverse", 0) != 0) {}
  std::string tactic() const override { return "kernel:cumprod"; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs[0];
    const LayerTensor& ax = l.inputs[1];
    const int code = cumprod_code(x.dtype);
    KILNRT_CHECK(code >= 0, kUnsupported, name_, "CumProd of " << dtype_name(x.dtype) << " has no CUDA kernel");
    KILNRT_CHECK(ax.dtype == DType::kInt64 || ax.dtype == DType::kInt32, kInvalidModel, name_,
                 "axis must be int32 / int64, got " << dtype_name(ax.dtype));
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    KILNRT_CHECK(rank >= 1, kInvalidModel, name_, "CumProd: input must have rank >= 1");
    KILNRT_CHECK(rank <= la::kMaxNormDims, kUnsupported, name_,
                 "rank " << rank << " exceeds the CUDA kernel's limit of " << la::kMaxNormDims);
    KILNRT_CHECK(ax.numel() == 1, kInvalidModel, name_, "axis must hold one value, got " << shape_to_string(ax.shape));
    if (ax.host) {  // a known axis (constant): out of range is the CPU reference's error
      const int64_t v = ax.dtype == DType::kInt64 ? ax.host->data<int64_t>()[0] : ax.host->data<int32_t>()[0];
      (void)ops::normalize_axis(v, rank, node_);
    }
    if (x.numel() == 0) return;
    check_launch(la::cumprod(x.data, l.outputs[0].data, ax.data, ax.dtype == DType::kInt64, static_cast<int>(rank),
                             x.shape.data(), exclusive_, reverse_, code, l.stream),
                 name_, "cumprod");
  }

 private:
  const ir::Node& node_;
  std::string name_;
  bool exclusive_, reverse_;
};

std::string supports_cumprod(const ir::Node& n, const ir::Graph& g) {
  if (!has(n, 0) || !has(n, 1)) return "input and axis are required";
  const DType x = value_dtype(g, n.inputs[0]), a = value_dtype(g, n.inputs[1]);
  if (x != DType::kUndefined && cumprod_code(x) < 0)
    return std::string("dtype ") + dtype_name(x) +
           " of input 0 (the CUDA kernel takes float32 / float64 / int32 / int64)";
  if (a != DType::kUndefined && a != DType::kInt64 && a != DType::kInt32) return "axis must be int32 / int64";
  return "";
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER({"CumProd"}, supports_cumprod, factory<CumProdLayer>());

}  // namespace kilnrt::backends::cuda
