// CUDA layers of NonZero and Compress, whose output shapes depend on the input's values (data_dependent_layer.h).
// Both scan the non-zero flags on the device in order (cuda/kernels/nonzero_scan.cu), read the count on the host (the
// layer's one stream sync) and then fill the counted prefix of their upper-bound output. Scratch (flat indices and
// the device count) lives in the context workspace, so an input larger than the workspace's index capacity is a clear
// error.
#include <algorithm>

#include "ops/cuda/data_dependent_layer.h"
#include "cuda/kernels/nonzero_scan.h"

namespace kilnrt::backends::cuda {
namespace {

namespace dd = kilnrt::cuda::kernels::dd;

bool float_kind(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat64;
}

// Workspace layout: the device count at 0, flat indices from byte 256.
struct Scratch {
  int64_t* count = nullptr;
  int64_t* flat = nullptr;
  int64_t capacity = 0;  // flat indices that fit
};
Scratch scratch_of(const LayerLaunch& l) {
  Scratch s;
  s.count = static_cast<int64_t*>(l.workspace);
  s.flat = reinterpret_cast<int64_t*>(static_cast<char*>(l.workspace) + 256);
  s.capacity = l.workspace_bytes > 256 ? static_cast<int64_t>((l.workspace_bytes - 256) / sizeof(int64_t)) : 0;
  return s;
}

// Ordered scan of x's non-zero elements: returns the count (synchronises the stream).
int64_t scan_nonzero(const LayerLaunch& l, const void* x, int64_t n, DType dt, const std::string& name,
                     const std::string& what) {
  const Scratch s = scratch_of(l);
  KILNRT_CHECK(n <= s.capacity, kUnsupported, name,
               what << " has " << n << " elements: the CUDA layer scans at most " << s.capacity
                    << " (its index scratch lives in the context's workspace)");
  int64_t count = 0;
  if (n == 0) return 0;
  check_launch(dd::nonzero_flat(x, n, dtype_size(dt), float_kind(dt), s.flat, s.count, &count, l.stream), name,
               "nonzero_flat");
  KILNRT_CHECK(count >= 0 && count <= n, kInternal, name, "device count " << count << " out of range");
  return count;
}

class NonZeroLayer final : public DataDependentLayer {
 public:
  explicit NonZeroLayer(const ir::Node& n) : name_(n.describe()) {}
  std::string tactic() const override { return "kernel:nonzero-scan"; }
  std::vector<Shape> max_output_shapes(const std::vector<LayerTensor>& in) const override {
    const int64_t rank = std::max<int64_t>(static_cast<int64_t>(in.at(0).shape.size()), 1);
    return {Shape{rank, in.at(0).numel()}};
  }
  std::vector<DType> output_dtypes(const std::vector<LayerTensor>&) const override { return {DType::kInt64}; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    KILNRT_CHECK(x.shape.size() <= static_cast<size_t>(dd::kMaxRank), kUnsupported, name_,
                 "NonZero of rank " << x.shape.size() << " (the CUDA layer takes up to " << dd::kMaxRank << ")");
    const int64_t count = scan_nonzero(l, x.data, x.numel(), x.dtype, name_, "the input");
    LayerOutput& y = l.outputs.at(0);
    const int rank = std::max<int>(static_cast<int>(x.shape.size()), 1);
    y.shape = Shape{rank, count};
    if (count == 0) return;
    Shape dims = x.shape.empty() ? Shape{1} : x.shape;
    check_launch(
        dd::nonzero_coords(scratch_of(l).flat, count, dims.data(), rank, static_cast<int64_t*>(y.data), l.stream),
        name_, "nonzero_coords");
  }

 private:
  std::string name_;
};

class CompressLayer final : public DataDependentLayer {
 public:
  explicit CompressLayer(const ir::Node& n) : name_(n.describe()), flat_(!n.has_attr("axis")) {
    if (!flat_) axis_ = n.attr_int("axis");
  }
  std::string tactic() const override { return "kernel:compress-scan"; }
  // [outer, dim, inner] view of x and the normalised axis.
  void view(const Shape& x, Shape* shape, int64_t* axis) const {
    *shape = flat_ ? Shape{shape_numel(x)} : x;
    const int64_t r = static_cast<int64_t>(shape->size());
    *axis = flat_ ? 0 : (axis_ < 0 ? axis_ + r : axis_);
    KILNRT_CHECK(*axis >= 0 && *axis < r, kInvalidArgument, name_,
                 "axis " << axis_ << " is out of range for an input of rank " << r);
  }
  std::vector<Shape> max_output_shapes(const std::vector<LayerTensor>& in) const override {
    Shape shape;
    int64_t axis = 0;
    view(in.at(0).shape, &shape, &axis);
    shape[axis] = std::min(shape[axis], in.at(1).numel());
    return {shape};
  }
  std::vector<DType> output_dtypes(const std::vector<LayerTensor>& in) const override { return {in.at(0).dtype}; }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    const LayerTensor& cond = l.inputs.at(1);
    Shape shape;
    int64_t axis = 0;
    view(x.shape, &shape, &axis);
    const int64_t n = std::min(shape[axis], cond.numel());
    const int64_t count = scan_nonzero(l, cond.data, n, cond.dtype, name_, "the condition");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
    const int64_t axis_dim = shape[axis];
    LayerOutput& y = l.outputs.at(0);
    shape[axis] = count;
    y.shape = shape;
    check_launch(dd::gather_axis(x.data, scratch_of(l).flat, count, outer, axis_dim, inner, dtype_size(x.dtype), y.data,
                                 l.stream),
                 name_, "gather_axis");
  }

 private:
  std::string name_;
  bool flat_;
  int64_t axis_ = 0;
};

std::string supports_dd(const ir::Node& n, const ir::Graph& g) {
  const DType t = value_dtype(g, n.inputs.at(0));
  if (t != DType::kUndefined && dtype_size(t) != 1 && dtype_size(t) != 2 && dtype_size(t) != 4 && dtype_size(t) != 8)
    return "dtype " + std::string(dtype_name(t));
  return "";
}

KILNRT_REGISTER_CUDA_LAYER({"NonZero"}, supports_dd, [](const LayerCreateArgs& a) {
  return std::unique_ptr<CudaLayer>(new NonZeroLayer(a.node));
});
KILNRT_REGISTER_CUDA_LAYER(
    {"Compress"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      if (n.inputs.size() < 2 || n.inputs[1].empty()) return "Compress needs a condition";
      return supports_dd(n, g);
    },
    [](const LayerCreateArgs& a) { return std::unique_ptr<CudaLayer>(new CompressLayer(a.node)); });

}  // namespace
}  // namespace kilnrt::backends::cuda
