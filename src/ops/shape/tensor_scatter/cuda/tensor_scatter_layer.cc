// The CUDA layer of TensorScatter (any element size), on the kernel of tensor_scatter_kernels.h (one thread per output
// element, following the CPU reference's arithmetic).
#include <algorithm>
#include <vector>

#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/layer_checks.h"
#include "ops/cuda/layer_helpers.h"
#include "ops/shape/tensor_scatter/cuda/tensor_scatter_kernels.h"
#include "ops/nn/nn_common.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace gk = kilnrt::cuda::kernels::geom;

// ---- TensorScatter
// --------------------------------------------------------------------------------------------------- write_indices is
// read by the kernel on the device (no sync). The CPU reference refuses a linear-mode position past the cache; the
// kernel cannot raise, so such positions are not written — unless write_indices is a host value (constant / shape
// computation), which is checked here with the CPU reference's error.
class TensorScatterLayer final : public CudaLayer {
 public:
  explicit TensorScatterLayer(const ir::Node& n)
      : node_(n), name_(n.describe()), mode_(n.attr_string("mode", "linear")), axis_(n.attr_int("axis", -2)) {
    KILNRT_CHECK(mode_ == "linear" || mode_ == "circular", kInvalidModel, name_,
                 "mode must be linear or circular, got '" << mode_ << "'");
  }
  std::string tactic() const override { return "kernel:tensor-scatter"; }
  bool supports_16bit() const override { return true; }  // elements are moved, not computed
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& cache = l.inputs.at(0);
    const LayerTensor& update = l.inputs.at(1);
    const Shape& cs = cache.shape;
    const Shape& us = update.shape;
    const int64_t rank = static_cast<int64_t>(cs.size());
    KILNRT_CHECK(update.dtype == cache.dtype && us.size() == cs.size() && rank >= 2, kInvalidModel, name_,
                 "update " << shape_to_string(us) << " must have past_cache's dtype and rank (>= 2)");
    const int64_t axis = ops::normalize_axis(axis_, rank, node_);
    KILNRT_CHECK(axis >= 1, kInvalidModel, name_, "axis must not be the batch axis 0");
    for (int64_t d = 0; d < rank; ++d)
      KILNRT_CHECK(d == axis ? us[d] <= cs[d] : us[d] == cs[d], kInvalidModel, name_,
                   "update " << shape_to_string(us) << " does not fit past_cache " << shape_to_string(cs)
                             << " along axis " << axis);
    gk::ScatterGeom g;
    g.batch = cs[0];
    g.max_len = cs[axis];
    g.len = us[axis];
    g.circular = mode_ == "circular";
    for (int64_t d = 1; d < axis; ++d) g.prefix *= cs[d];
    for (int64_t d = axis + 1; d < rank; ++d) g.inner *= cs[d];
    const int64_t* idx = nullptr;
    if (l.inputs.size() > 2 && l.inputs[2].present) {
      const LayerTensor& wi = l.inputs[2];
      KILNRT_CHECK(wi.dtype == DType::kInt64 && wi.numel() == g.batch, kInvalidModel, name_,
                   "write_indices must be int64 with the batch size "
                       << g.batch << " values, got " << dtype_name(wi.dtype) << " " << shape_to_string(wi.shape));
      idx = static_cast<const int64_t*>(wi.data);
      if (wi.host && !g.circular && g.len > 0) {
        const std::vector<int64_t> v = ops::tensor_to_int64s(*wi.host);
        for (int64_t b = 0; b < g.batch; ++b) {
          const int64_t first = v[static_cast<size_t>(b)], last = first + g.len - 1;
          const int64_t bad = first < 0 ? first : last;
          KILNRT_CHECK(first >= 0 && last < g.max_len, kInvalidArgument, name_,
                       "write position " << bad << " of batch " << b << " is outside the cache length " << g.max_len
                                         << " (mode linear)");
        }
      }
    } else {
      KILNRT_CHECK(g.circular || g.len <= g.max_len, kInvalidArgument, name_, "update longer than the cache");
    }
    expect_output(l.outputs.at(0), cs, name_);
    check_launch(
        gk::tensor_scatter(cache.data, update.data, idx, l.outputs[0].data, dtype_size(cache.dtype), g, l.stream),
        name_, "tensor_scatter");
  }

 private:
  const ir::Node& node_;
  std::string name_, mode_;
  int64_t axis_;
};

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"TensorScatter"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
        const DType d = value_dtype(g, n.inputs[2]);
        if (d != DType::kUndefined && d != DType::kInt64) return "write_indices must be int64";
      }
      return any_element_size(n, g);
    },
    factory<TensorScatterLayer>());

}  // namespace kilnrt::backends::cuda
