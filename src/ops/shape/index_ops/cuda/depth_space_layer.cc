// CUDA layer of DepthToSpace / SpaceToDepth: a 6-D view of the input, permuted by one strided copy (any dtype of
// 1, 2, 4 or 8 bytes).
#include <algorithm>

#include "ops/cuda/cuda_layer.h"
#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

namespace k = kilnrt::cuda::kernels;

// ---- DepthToSpace / SpaceToDepth: a 6-D view of the input, permuted -------------------------------------------------
class DepthSpaceLayer final : public CudaLayer {
 public:
  explicit DepthSpaceLayer(const ir::Node& n)
      : name_(n.describe()),
        to_space_(n.op_type == "DepthToSpace"),
        bs_(n.attr_int("blocksize")),
        crd_(n.attr_string("mode", std::string("DCR")) == "CRD") {}
  std::string tactic() const override { return "kernel:strided-copy"; }
  void enqueue(LayerLaunch& l) override {
    const Shape& xs = l.inputs[0].shape;
    KILNRT_CHECK(xs.size() == 4 && bs_ > 0, kInvalidArgument, name_, "needs a 4-D input and blocksize > 0");
    const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3], b = bs_;
    int64_t view[6];
    int perm[6];
    if (to_space_) {
      const int64_t oc = c / (b * b);
      if (crd_) {  // [n, oc, b, b, h, w] -> [n, oc, h, b, w, b]
        const int64_t v[6] = {n, oc, b, b, h, w};
        const int p[6] = {0, 1, 4, 2, 5, 3};
        std::copy(v, v + 6, view);
        std::copy(p, p + 6, perm);
      } else {  // DCR: [n, b, b, oc, h, w] -> [n, oc, h, b, w, b]
        const int64_t v[6] = {n, b, b, oc, h, w};
        const int p[6] = {0, 3, 4, 1, 5, 2};
        std::copy(v, v + 6, view);
        std::copy(p, p + 6, perm);
      }
    } else {  // DCR: [n, c, h/b, b, w/b, b] -> [n, b, b, c, h/b, w/b]; CRD (opset 24 mode): -> [n, c, b, b, h/b, w/b]
      const int64_t v[6] = {n, c, h / b, b, w / b, b};
      const int dcr[6] = {0, 3, 5, 1, 2, 4}, crd[6] = {0, 1, 3, 5, 2, 4};
      const int* p = crd_ ? crd : dcr;
      std::copy(v, v + 6, view);
      std::copy(p, p + 6, perm);
    }
    int64_t in_st[6], out_dims[6], out_st[6];
    in_st[5] = 1;
    for (int d = 4; d >= 0; --d) in_st[d] = in_st[d + 1] * view[d + 1];
    for (int d = 0; d < 6; ++d) out_dims[d] = view[perm[d]];
    out_st[5] = 1;
    for (int d = 4; d >= 0; --d) out_st[d] = out_st[d + 1] * out_dims[d + 1];
    k::Strided s;
    s.rank = 6;
    for (int d = 0; d < 6; ++d) {
      s.dims[d] = out_dims[d];
      s.in_strides[d] = in_st[perm[d]];
      s.out_strides[d] = out_st[d];
    }
    if (l.outputs[0].numel() == 0) return;
    check_launch(k::strided_copy(l.outputs[0].data, l.inputs[0].data, s, dtype_size(l.inputs[0].dtype), l.stream),
                 name_, "strided_copy");
  }

 private:
  std::string name_;
  bool to_space_;
  int64_t bs_;
  bool crd_;
};

template <class L>
LayerFactory factory() {
  return [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> { return std::make_unique<L>(a.node); };
}

}  // namespace

KILNRT_REGISTER_CUDA_LAYER(
    {"DepthToSpace", "SpaceToDepth"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      const size_t sz = dtype_size(value_dtype(g, n.inputs.at(0)));
      return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? "" : "unknown dtype";
    },
    factory<DepthSpaceLayer>());

}  // namespace kilnrt::backends::cuda
