// Sequence steps of CUDA engines (sequence_steps.h): host lists of device tensors, tensor data moved on the device.
// The semantics and error messages follow the CPU kernels (src/ops/sequence/sequence_ops/sequence_ops.cc), which are
// the reference these steps are tested against (tests/cpp/test_cuda_sequences.cc).
#include "backends/cuda/control_flow/sequence_steps.h"

#include <limits>
#include <string>

#include "ops/op_registry.h"

namespace kilnrt::backends::cuda {
namespace {

const DeviceSequence& sequence_input(const ir::Node& node, const std::vector<const DeviceSequence*>& seq_in, size_t i) {
  KILNRT_CHECK(i < seq_in.size() && seq_in[i], kInvalidArgument, node.describe(),
               "input " << i << (i < node.inputs.size() ? " ('" + node.inputs[i] + "')" : std::string())
                        << " must be a sequence");
  return *seq_in[i];
}

const LayerTensor& tensor_input(const ir::Node& node, const LayerLaunch& launch,
                                const std::vector<const DeviceSequence*>& seq_in, size_t i) {
  KILNRT_CHECK(i >= seq_in.size() || !seq_in[i], kInvalidArgument, node.describe(),
               "input " << i << " ('" << node.inputs[i] << "') must be a tensor, not a sequence");
  KILNRT_CHECK(i < launch.inputs.size() && launch.inputs[i].present, kInvalidArgument, node.describe(),
               "input " << i << " is missing");
  return launch.inputs[i];
}

bool has_input(const LayerLaunch& launch, size_t i) { return i < launch.inputs.size() && launch.inputs[i].present; }

// A position input (scalar int32/int64, read on the host) normalised against [-len, len + extra - 1].
int64_t position(const ir::Node& node, const LayerTensor& p, int64_t len, int64_t extra) {
  KILNRT_CHECK(p.host, kInternal, node.describe(), "the position was not read on the host");
  KILNRT_CHECK(p.host->numel() == 1 && (p.host->dtype() == DType::kInt64 || p.host->dtype() == DType::kInt32),
               kInvalidArgument, node.describe(), "position must be one int32/int64 element");
  const int64_t pos = ops::tensor_to_int64s(*p.host)[0];
  KILNRT_CHECK(pos >= -len && pos < len + extra, kInvalidArgument, node.describe(),
               "position " << pos << " is out of range for a sequence of length " << len << " (valid: " << -len
                           << " to " << len + extra - 1 << ")");
  return pos < 0 ? pos + len : pos;
}

DeviceSequenceItem item_of(const LayerTensor& t) { return DeviceSequenceItem{t.data, t.dtype, t.shape}; }

void check_element_dtype(const ir::Node& node, const DeviceSequence& seq, DType t) {
  if (seq.items.empty()) return;
  KILNRT_CHECK(seq.items[0].dtype == t, kInvalidArgument, node.describe(),
               "tensor of dtype " << dtype_name(t) << " cannot join a sequence of " << dtype_name(seq.items[0].dtype));
}

// Copies `rows` x `count` x `inner` elements between [outer, src_len, inner] and [outer, dst_len, inner] views,
// starting at src_begin / dst_begin along the middle axis (kilnrt's strided-copy kernel on the caller's stream).
void copy_block(const ir::Node& node, void* dst, int64_t dst_len, int64_t dst_begin, const void* src, int64_t src_len,
                int64_t src_begin, int64_t outer, int64_t count, int64_t inner, DType dtype, StreamT stream) {
  if (outer == 0 || count == 0 || inner == 0) return;
  kilnrt::cuda::kernels::Strided s;
  s.rank = 3;
  s.dims[0] = outer;
  s.dims[1] = count;
  s.dims[2] = inner;
  s.out_strides[0] = dst_len * inner;
  s.out_strides[1] = inner;
  s.out_strides[2] = 1;
  s.in_strides[0] = src_len * inner;
  s.in_strides[1] = inner;
  s.in_strides[2] = 1;
  s.out_offset = dst_begin * inner;
  s.in_offset = src_begin * inner;
  const size_t es = dtype_size(dtype);
  KILNRT_CHECK(es == 1 || es == 2 || es == 4 || es == 8, kUnsupported, node.describe(),
               "sequence elements of dtype " << dtype_name(dtype) << " cannot be copied on the GPU");
  check_launch(kilnrt::cuda::kernels::strided_copy(dst, src, s, es, stream), node.describe(), "strided_copy");
}

void split_to_sequence(const ir::Node& node, const LayerLaunch& launch,
                       const std::vector<const DeviceSequence*>& seq_in, DeviceSequence& out,
                       const std::function<void*(size_t)>& alloc) {
  const LayerTensor& x = tensor_input(node, launch, seq_in, 0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  KILNRT_CHECK(rank >= 1, kInvalidArgument, node.describe(), "SplitToSequence needs an input of rank >= 1");
  const int64_t axis = ops::normalize_axis(node.attr_int("axis", 0), rank, node);
  const int64_t dim = x.shape[axis];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!has_input(launch, 1)) {
    sizes.assign(static_cast<size_t>(dim), 1);
    squeeze = node.attr_int("keepdims", 1) == 0;
  } else {
    const LayerTensor& sp = launch.inputs[1];
    KILNRT_CHECK(sp.host, kInternal, node.describe(), "the split sizes were not read on the host");
    const std::vector<int64_t> v = ops::tensor_to_int64s(*sp.host);
    if (sp.host->rank() == 0) {
      KILNRT_CHECK(v[0] > 0, kInvalidArgument, node.describe(), "split must be positive, is " << v[0]);
      for (int64_t done = 0; done < dim; done += v[0]) sizes.push_back(std::min(v[0], dim - done));
    } else {
      KILNRT_CHECK(sp.host->rank() == 1, kInvalidArgument, node.describe(), "split must be a scalar or 1-D");
      int64_t sum = 0;
      for (int64_t s : v) {
        KILNRT_CHECK(s >= 0, kInvalidArgument, node.describe(), "split sizes must not be negative, got " << s);
        KILNRT_CHECK(s <= dim - sum, kInvalidArgument, node.describe(),
                     "split sizes add up to more than the axis' " << dim);
        sum += s;
      }
      KILNRT_CHECK(sum == dim, kInvalidArgument, node.describe(),
                   "split sizes add up to " << sum << ", the axis has " << dim);
      sizes = v;
    }
  }
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape[i];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= x.shape[i];
  out.dtype = x.dtype;
  int64_t begin = 0;
  for (int64_t n : sizes) {
    Shape s = x.shape;
    s[axis] = n;
    if (squeeze) s.erase(s.begin() + axis);
    void* data = alloc(static_cast<size_t>(shape_numel(s)) * dtype_size(x.dtype));
    copy_block(node, data, n, 0, x.data, dim, begin, outer, n, inner, x.dtype, launch.stream);
    out.items.push_back(DeviceSequenceItem{data, x.dtype, s});
    begin += n;
  }
}

void concat_from_sequence(const ir::Node& node, const DeviceSequence& seq, LayerOutput& out, StreamT stream,
                          const std::function<void*(size_t)>& alloc) {
  KILNRT_CHECK(!seq.items.empty(), kInvalidArgument, node.describe(), "cannot concatenate an empty sequence");
  const bool new_axis = node.attr_int("new_axis", 0) != 0;
  const DeviceSequenceItem& first = seq.items[0];
  const int64_t first_rank = static_cast<int64_t>(first.shape.size());
  const int64_t rank = first_rank + (new_axis ? 1 : 0);
  KILNRT_CHECK(rank >= 1, kInvalidArgument, node.describe(), "cannot concatenate scalars without new_axis=1");
  const int64_t axis = ops::normalize_axis(node.attr_int("axis"), rank, node);
  Shape out_shape = first.shape;
  if (new_axis)
    out_shape.insert(out_shape.begin() + axis, 0);
  else
    out_shape[axis] = 0;
  std::vector<int64_t> lens;
  for (size_t k = 0; k < seq.items.size(); ++k) {
    const DeviceSequenceItem& t = seq.items[k];
    KILNRT_CHECK(t.dtype == first.dtype && t.shape.size() == first.shape.size(), kInvalidArgument, node.describe(),
                 "sequence element " << k << " (" << dtype_name(t.dtype) << " " << shape_to_string(t.shape)
                                     << ") does not match element 0 (" << dtype_name(first.dtype) << " "
                                     << shape_to_string(first.shape) << ")");
    Shape s = t.shape;
    if (new_axis) s.insert(s.begin() + axis, 1);
    for (int64_t d = 0; d < rank; ++d)
      KILNRT_CHECK(d == axis || s[d] == out_shape[d], kInvalidArgument, node.describe(),
                   "sequence element " << k << " has shape " << shape_to_string(t.shape) << ", element 0 has "
                                       << shape_to_string(first.shape) << ": they differ outside axis " << axis);
    KILNRT_CHECK(s[axis] <= std::numeric_limits<int64_t>::max() - out_shape[axis], kInvalidArgument, node.describe(),
                 "the concatenated axis is too long");
    out_shape[axis] += s[axis];
    lens.push_back(s[axis]);
  }
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= out_shape[i];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= out_shape[i];
  out.dtype = first.dtype;
  out.shape = out_shape;
  out.data = alloc(static_cast<size_t>(shape_numel(out_shape)) * dtype_size(first.dtype));
  int64_t offset = 0;
  for (size_t k = 0; k < seq.items.size(); ++k) {
    copy_block(node, out.data, out_shape[axis], offset, seq.items[k].data, lens[k], 0, outer, lens[k], inner,
               first.dtype, stream);
    offset += lens[k];
  }
}

}  // namespace

DeviceSequence copy_sequence(const DeviceSequence& seq, const std::function<void*(size_t)>& alloc, StreamT stream,
                             const std::string& where) {
  DeviceSequence out;
  out.dtype = seq.dtype;
  for (const DeviceSequenceItem& it : seq.items) {
    const int64_t n = shape_numel(it.shape);
    void* data = alloc(static_cast<size_t>(n) * dtype_size(it.dtype));
    ir::Node named;
    named.name = where;
    copy_block(named, data, 1, 0, it.data, 1, 0, 1, 1, n, it.dtype, stream);
    out.items.push_back(DeviceSequenceItem{data, it.dtype, it.shape});
  }
  return out;
}

std::vector<int> SequenceLayer::host_inputs() const {
  const std::string& op = node_.op_type;
  if (op == "SequenceAt" || op == "SequenceErase" || op == "SplitToSequence") return {1};
  if (op == "SequenceInsert") return {2};
  return {};
}

void SequenceLayer::run(LayerLaunch& launch, const std::vector<const DeviceSequence*>& seq_in,
                        std::vector<DeviceSequence>& seq_out, std::vector<Tensor>& host_out,
                        const std::function<void*(size_t)>& alloc) const {
  const ir::Node& node = node_;
  const std::string& op = node.op_type;
  seq_out.assign(node.outputs.size(), DeviceSequence{});
  host_out.assign(node.outputs.size(), Tensor());
  KILNRT_CHECK(!launch.outputs.empty(), kInternal, node.describe(), "a sequence step without outputs");
  if (op == "SequenceEmpty") {
    seq_out[0].dtype = static_cast<DType>(node.attr_int("dtype", static_cast<int64_t>(DType::kFloat32)));
  } else if (op == "SequenceConstruct") {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const LayerTensor& t = tensor_input(node, launch, seq_in, i);
      check_element_dtype(node, seq_out[0], t.dtype);
      seq_out[0].dtype = t.dtype;
      seq_out[0].items.push_back(item_of(t));
    }
  } else if (op == "SequenceInsert") {
    seq_out[0] = sequence_input(node, seq_in, 0);
    const LayerTensor& t = tensor_input(node, launch, seq_in, 1);
    check_element_dtype(node, seq_out[0], t.dtype);
    const int64_t len = static_cast<int64_t>(seq_out[0].items.size());
    const int64_t pos = has_input(launch, 2) ? position(node, launch.inputs[2], len, 1) : len;
    seq_out[0].items.insert(seq_out[0].items.begin() + pos, item_of(t));
    seq_out[0].dtype = t.dtype;
  } else if (op == "SequenceAt") {
    const DeviceSequence& seq = sequence_input(node, seq_in, 0);
    const int64_t pos =
        position(node, tensor_input(node, launch, seq_in, 1), static_cast<int64_t>(seq.items.size()), 0);
    const DeviceSequenceItem& it = seq.items[static_cast<size_t>(pos)];
    // A view: sequence elements are never written in place in a segmented run.
    launch.outputs[0] = LayerOutput{const_cast<void*>(it.data), it.dtype, it.shape, true};
  } else if (op == "Identity") {
    seq_out[0] = sequence_input(node, seq_in, 0);
  } else if (op == "SequenceErase") {
    seq_out[0] = sequence_input(node, seq_in, 0);
    const int64_t len = static_cast<int64_t>(seq_out[0].items.size());
    KILNRT_CHECK(has_input(launch, 1) || len > 0, kInvalidArgument, node.describe(),
                 "cannot erase from an empty sequence");
    const int64_t pos = has_input(launch, 1) ? position(node, launch.inputs[1], len, 0) : len - 1;
    seq_out[0].items.erase(seq_out[0].items.begin() + pos);
  } else if (op == "SequenceLength") {
    const int64_t n = static_cast<int64_t>(sequence_input(node, seq_in, 0).items.size());
    host_out[0] = Tensor::from_vector(std::vector<int64_t>{n}, DType::kInt64, {});
    launch.outputs[0] = LayerOutput{nullptr, DType::kInt64, Shape{}, true};
  } else if (op == "SplitToSequence") {
    split_to_sequence(node, launch, seq_in, seq_out[0], alloc);
  } else if (op == "ConcatFromSequence") {
    concat_from_sequence(node, sequence_input(node, seq_in, 0), launch.outputs[0], launch.stream, alloc);
    launch.outputs[0].present = true;
  } else {
    KILNRT_THROW(kUnsupported, node.describe(), "sequence values are not supported on CUDA yet (" << op << ")");
  }
}

namespace {

std::string sequence_supported(const ir::Node&, const ir::Graph&) { return ""; }

std::unique_ptr<CudaLayer> make_sequence_layer(const LayerCreateArgs& a) {
  return std::make_unique<SequenceLayer>(a.node, a.opset);
}

// Executor-owned layers: sequences are host lists of device tensors that the executor keeps (sequence_steps.h).
KILNRT_REGISTER_CUDA_LAYER({"SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceAt", "SequenceErase",
                            "SequenceLength", "SplitToSequence", "ConcatFromSequence"},
                           sequence_supported, make_sequence_layer);

}  // namespace
}  // namespace kilnrt::backends::cuda
