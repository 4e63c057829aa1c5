// The CUDA layer of Unique: a data-dependent layer (data_dependent_layer.h) whose count is read on the host once
// (the plan's sync point), then the outputs are written at their exact sizes into upper-bound storage. Kernels:
// unique.cu and the ordered non-zero scan (cuda/kernels/nonzero_scan.h). Scratch lives in the context workspace:
// inputs too large for it are a clear error naming the node.
#include "ops/cuda/data_dependent_layer.h"
#include "cuda/kernels/nonzero_scan.h"
#include "ops/shape/unique/cuda/unique_kernels.h"

namespace kilnrt::backends::cuda {
namespace {

namespace dd = kilnrt::cuda::kernels::dd;
namespace un = kilnrt::cuda::kernels::un;

int unique_code(DType t) {
  switch (t) {
    case DType::kFloat32: return 0;
    case DType::kInt64: return 1;
    case DType::kInt32: return 2;
    case DType::kUInt8:
    case DType::kBool: return 3;
    case DType::kInt8: return 4;
    case DType::kFloat64: return 5;
    case DType::kFloat16: return 6;
    case DType::kBFloat16: return 7;
    default: return -1;
  }
}

class UniqueLayer final : public DataDependentLayer {
 public:
  explicit UniqueLayer(const ir::Node& n)
      : name_(n.describe()), sorted_(n.attr_int("sorted", 1) != 0), has_axis_(n.has_attr("axis")) {
    if (has_axis_) axis_ = n.attr_int("axis");
  }
  std::string tactic() const override { return "kernel:unique-pairwise"; }
  // [outer, n, inner] view of x.
  void view(const Shape& x, Shape* shape, int64_t* axis, int64_t* outer, int64_t* inner) const {
    *shape = has_axis_ ? x : Shape{shape_numel(x)};
    const int64_t r = static_cast<int64_t>(shape->size());
    *axis = has_axis_ ? (axis_ < 0 ? axis_ + r : axis_) : 0;
    KILNRT_CHECK(*axis >= 0 && *axis < r, kInvalidArgument, name_,
                 "axis " << axis_ << " is out of range for an input of rank " << r);
    *outer = 1;
    *inner = 1;
    for (int64_t d = 0; d < *axis; ++d) *outer *= (*shape)[d];
    for (size_t d = *axis + 1; d < shape->size(); ++d) *inner *= (*shape)[d];
  }
  std::vector<Shape> max_output_shapes(const std::vector<LayerTensor>& in) const override {
    Shape shape;
    int64_t axis, outer, inner;
    view(in.at(0).shape, &shape, &axis, &outer, &inner);
    const int64_t n = shape[axis];
    return {shape, Shape{n}, Shape{n}, Shape{n}};
  }
  std::vector<DType> output_dtypes(const std::vector<LayerTensor>& in) const override {
    return {in.at(0).dtype, DType::kInt64, DType::kInt64, DType::kInt64};
  }
  void enqueue(LayerLaunch& l) override {
    const LayerTensor& x = l.inputs.at(0);
    Shape shape;
    int64_t axis, outer, inner;
    view(x.shape, &shape, &axis, &outer, &inner);
    const int64_t n = shape[axis];
    // Workspace: count | firsts | first | pos | slot_of | indices | inverse | counts (n int64 each) | flags (n bytes).
    const size_t need = 256 + size_t(n) * (7 * sizeof(int64_t) + 1);
    KILNRT_CHECK(need <= l.workspace_bytes, kUnsupported, name_,
                 "Unique over " << n << " slices needs " << need << " bytes of scratch, more than the context's "
                                << l.workspace_bytes << "-byte workspace");
    auto* count_dev = static_cast<int64_t*>(l.workspace);
    auto* firsts = reinterpret_cast<int64_t*>(static_cast<char*>(l.workspace) + 256);
    int64_t* first = firsts + n;
    int64_t* pos = first + n;
    int64_t* slot_of = pos + n;
    int64_t* indices = slot_of + n;
    int64_t* inverse = indices + n;
    int64_t* counts = inverse + n;
    auto* flags = reinterpret_cast<uint8_t*>(counts + n);
    auto out_or = [&](size_t o, int64_t* scratch) {
      return o < l.outputs.size() && l.outputs[o].present ? static_cast<int64_t*>(l.outputs[o].data) : scratch;
    };
    indices = out_or(1, indices);
    inverse = out_or(2, inverse);
    counts = out_or(3, counts);
    un::UniqueView v{x.data, unique_code(x.dtype), outer, n, inner};
    check_launch(un::unique_first(v, first, flags, l.stream), name_, "unique_first");
    int64_t u = 0;
    if (n > 0)
      check_launch(dd::nonzero_flat(flags, n, 1, false, firsts, count_dev, &u, l.stream), name_, "nonzero_flat");
    KILNRT_CHECK(u >= 0 && u <= n, kInternal, name_, "device count " << u << " out of range");
    check_launch(un::unique_place(v, firsts, u, sorted_, pos, slot_of, indices, counts, l.stream), name_,
                 "unique_place");
    check_launch(un::unique_inverse(n, first, pos, slot_of, inverse, counts, l.stream), name_, "unique_inverse");
    LayerOutput& y = l.outputs.at(0);
    Shape yshape = shape;
    yshape[axis] = u;
    y.shape = yshape;
    check_launch(dd::gather_axis(x.data, indices, u, outer, n, inner, dtype_size(x.dtype), y.data, l.stream), name_,
                 "gather_axis");
    if (l.outputs.size() > 1) l.outputs[1].shape = Shape{u};
    if (l.outputs.size() > 2) l.outputs[2].shape = Shape{n};
    if (l.outputs.size() > 3) l.outputs[3].shape = Shape{u};
  }

 private:
  std::string name_;
  bool sorted_, has_axis_;
  int64_t axis_ = 0;
};

KILNRT_REGISTER_CUDA_LAYER(
    {"Unique"},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      const DType t = value_dtype(g, n.inputs.at(0));
      if (t != DType::kUndefined && unique_code(t) < 0) return "dtype " + std::string(dtype_name(t));
      return "";
    },
    [](const LayerCreateArgs& a) { return std::unique_ptr<CudaLayer>(new UniqueLayer(a.node)); });

}  // namespace
}  // namespace kilnrt::backends::cuda
