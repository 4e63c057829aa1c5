// CUDA layers of shape/concat_split: Concat and Split copy each input (output) block into (out of) the whole with
// one strided-copy kernel per block.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/strided_copy_layer.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

// Copies `part` (contiguous, shape `ps`) into `whole` (contiguous, shape `ws`) at `offset` along `axis`, or the other
// way round (to_part) for Split.
void copy_block(const std::string& name, void* dst, const void* src, const Shape& ws, const Shape& ps, int axis,
                int64_t offset, bool to_part, size_t elem, StreamT stream) {
  check_rank(ws.size(), name);
  const auto w_st = contiguous_strides(ws), p_st = contiguous_strides(ps);
  k::Strided s;
  s.rank = static_cast<int>(ps.size());
  for (int d = 0; d < s.rank; ++d) {
    s.dims[d] = ps[d];
    (to_part ? s.in_strides : s.out_strides)[d] = w_st[d];
    (to_part ? s.out_strides : s.in_strides)[d] = p_st[d];
  }
  (to_part ? s.in_offset : s.out_offset) = offset * w_st[axis];
  check_launch(k::strided_copy(dst, src, s, elem, stream), name, "strided_copy");
}

class ConcatLayer final : public CudaLayer {
 public:
  explicit ConcatLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:strided-copy"; }
  bool supports_16bit() const override { return true; }
  void enqueue(LayerLaunch& l) override {
    const Shape& ys = l.outputs[0].shape;
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis"), ys.size(), node_));
    int64_t offset = 0;
    for (const LayerTensor& in : l.inputs) {
      if (!in.present) continue;
      if (in.numel() > 0)
        copy_block(name_, l.outputs[0].data, in.data, ys, in.shape, axis, offset, false, dtype_size(in.dtype),
                   l.stream);
      offset += in.shape[axis];
    }
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

class SplitLayer final : public CudaLayer {
 public:
  explicit SplitLayer(const ir::Node& n) : node_(n), name_(n.describe()) {}
  std::string tactic() const override { return "kernel:strided-copy"; }
  bool supports_16bit() const override { return true; }
  std::vector<int> host_inputs() const override { return {1}; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    const int axis = static_cast<int>(ops::normalize_axis(node_.attr_int("axis", 0), xs.size(), node_));
    int64_t offset = 0;
    for (const LayerOutput& out : l.outputs) {
      if (!out.present) continue;  // omitted outputs still occupy their part: shapes come from inference
      if (out.numel() > 0)
        copy_block(name_, out.data, l.inputs[0].data, xs, out.shape, axis, offset, true, dtype_size(out.dtype),
                   l.stream);
      offset += out.shape[axis];
    }
  }

 private:
  const ir::Node& node_;
  std::string name_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

KILNRT_REGISTER_CUDA_LAYER({"Concat"}, any_dtype, factory<ConcatLayer>());
KILNRT_REGISTER_CUDA_LAYER({"Split"}, any_dtype, factory<SplitLayer>());

}  // namespace
}  // namespace kilnrt::backends::cuda
