// ONNX sequence ops on the CPU backend: SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase,
// SequenceLength, SplitToSequence and ConcatFromSequence. A sequence is a TensorSequence held on the host by the
// executor (CpuContext::seq_inputs / seq_outputs); its elements share buffers with the tensors put into it (values
// are never written in place). Positions may be negative (counted from the end) and are checked against the
// sequence's length, naming the node.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/check.h"
#include "ops/op_registry.h"

namespace kilnrt::ops {

const TensorSequence& CpuContext::sequence_input(size_t i) const {
  KILNRT_CHECK(has_sequence_input(i), kInvalidArgument, node.describe(),
               "input " << i << (i < node.inputs.size() ? " ('" + node.inputs[i] + "')" : std::string())
                        << " must be a sequence");
  return *seq_inputs[i];
}

void CpuContext::set_sequence_output(size_t i, TensorSequence seq) {
  KILNRT_CHECK(i < node.outputs.size(), kInternal, node.describe(), "output index " << i << " out of range");
  if (seq_outputs.size() < node.outputs.size()) seq_outputs.resize(node.outputs.size());
  seq_outputs[i] = std::move(seq);
}

namespace {

// ---- shape functions --------------------------------------------------------------------------------------------

void set_sequence(ShapeContext& ctx, size_t i, DType dtype, const ir::TensorType* element) {
  if (element && element->has_shape)
    ctx.set_output(i, dtype, element->shape);
  else
    ctx.set_output_rank_unknown(i, dtype);
  ctx.outputs[i].is_sequence = true;
}

// The element type both `a` and `b` describe: dims that differ become unknown, rank unknown if ranks differ.
ir::TensorType merge_elements(const ir::TensorType& a, const ir::TensorType& b) {
  ir::TensorType t;
  t.dtype = a.dtype == b.dtype ? a.dtype : (a.dtype == DType::kUndefined ? b.dtype : a.dtype);
  if (!a.has_shape || !b.has_shape || a.shape.size() != b.shape.size()) return t;
  t.has_shape = true;
  t.shape = a.shape;
  for (size_t d = 0; d < t.shape.size(); ++d)
    if (t.shape[d] != b.shape[d]) t.shape[d] = ir::Dim();
  return t;
}

void sequence_empty_infer(ShapeContext& ctx) {
  const int64_t dt = ctx.node.attr_int("dtype", static_cast<int64_t>(DType::kFloat32));
  KILNRT_CHECK(dtype_is_valid(static_cast<int32_t>(dt)), kUnsupported, ctx.node.describe(),
               "SequenceEmpty dtype " << dt << " is not supported");
  set_sequence(ctx, 0, static_cast<DType>(dt), nullptr);
}

void sequence_construct_infer(ShapeContext& ctx) {
  KILNRT_CHECK(ctx.num_inputs() >= 1, kInvalidModel, ctx.node.describe(), "SequenceConstruct needs inputs");
  ir::TensorType element = ctx.input(0);
  element.sym_value.reset();
  for (size_t i = 1; i < ctx.num_inputs(); ++i) element = merge_elements(element, ctx.input(i));
  set_sequence(ctx, 0, element.dtype, &element);
}

void sequence_insert_infer(ShapeContext& ctx) {
  ir::TensorType element = merge_elements(ctx.input(0), ctx.input(1));
  if (ctx.input(0).dtype == DType::kUndefined) element.dtype = ctx.input(1).dtype;
  set_sequence(ctx, 0, element.dtype, &element);
}

void sequence_at_infer(ShapeContext& ctx) {
  const ir::TensorType& s = ctx.input(0);
  if (s.has_shape)
    ctx.set_output(0, s.dtype, s.shape);
  else
    ctx.set_output_rank_unknown(0, s.dtype);
}

void sequence_erase_infer(ShapeContext& ctx) { set_sequence(ctx, 0, ctx.input(0).dtype, &ctx.input(0)); }

void sequence_length_infer(ShapeContext& ctx) { ctx.set_output(0, DType::kInt64, {}); }

void split_to_sequence_infer(ShapeContext& ctx) {
  const ir::TensorType& x = ctx.input(0);
  if (!x.has_shape) return set_sequence(ctx, 0, x.dtype, nullptr);
  ir::TensorType element;
  element.dtype = x.dtype;
  element.has_shape = true;
  element.shape = x.shape;
  const int64_t axis = normalize_axis(ctx.node.attr_int("axis", 0), static_cast<int64_t>(x.shape.size()), ctx.node);
  if (ctx.has_input(1))
    element.shape[axis] = ir::Dim();  // chunk sizes may differ
  else if (ctx.node.attr_int("keepdims", 1) != 0)
    element.shape[axis] = ir::Dim(1);
  else
    element.shape.erase(element.shape.begin() + axis);
  set_sequence(ctx, 0, x.dtype, &element);
}

void concat_from_sequence_infer(ShapeContext& ctx) {
  const ir::TensorType& s = ctx.input(0);
  if (!s.has_shape) return ctx.set_output_rank_unknown(0, s.dtype);
  ir::SymShape shape = s.shape;
  const bool new_axis = ctx.node.attr_int("new_axis", 0) != 0;
  const int64_t rank = static_cast<int64_t>(shape.size()) + (new_axis ? 1 : 0);
  const int64_t axis = normalize_axis(ctx.node.attr_int("axis"), rank, ctx.node);
  if (new_axis)
    shape.insert(shape.begin() + axis, ir::Dim());
  else
    shape[axis] = ir::Dim();
  ctx.set_output(0, s.dtype, shape);
}

// ---- kernels ----------------------------------------------------------------------------------------------------

// Input i as a tensor; a sequence there is an error naming the node (instead of "input i is missing").
const Tensor& tensor_input(const CpuContext& ctx, size_t i) {
  KILNRT_CHECK(!ctx.has_sequence_input(i), kInvalidArgument, ctx.node.describe(),
               "input " << i << " ('" << ctx.node.inputs[i] << "') must be a tensor, not a sequence");
  return ctx.input(i);
}

// A position input (scalar int32/int64) normalised against `[-len, len + extra - 1]`; throws naming the node.
int64_t position(const CpuContext& ctx, size_t input, int64_t len, int64_t extra) {
  const Tensor& p = tensor_input(ctx, input);
  KILNRT_CHECK(p.numel() == 1 && (p.dtype() == DType::kInt64 || p.dtype() == DType::kInt32), kInvalidArgument,
               ctx.node.describe(), "position must be one int32/int64 element");
  const int64_t pos = tensor_to_int64s(p)[0];
  KILNRT_CHECK(pos >= -len && pos < len + extra, kInvalidArgument, ctx.node.describe(),
               "position " << pos << " is out of range for a sequence of length " << len << " (valid: " << -len
                           << " to " << len + extra - 1 << ")");
  return pos < 0 ? pos + len : pos;
}

void check_element_dtype(const CpuContext& ctx, const TensorSequence& seq, const Tensor& t) {
  if (seq.empty()) return;
  KILNRT_CHECK(
      seq[0].dtype() == t.dtype(), kInvalidArgument, ctx.node.describe(),
      "tensor of dtype " << dtype_name(t.dtype()) << " cannot join a sequence of " << dtype_name(seq[0].dtype()));
}

void sequence_empty_cpu(CpuContext& ctx) { ctx.set_sequence_output(0, {}); }

void sequence_construct_cpu(CpuContext& ctx) {
  TensorSequence seq;
  for (size_t i = 0; i < ctx.node.inputs.size(); ++i) {
    const Tensor& t = tensor_input(ctx, i);
    check_element_dtype(ctx, seq, t);
    seq.push_back(t);
  }
  ctx.set_sequence_output(0, std::move(seq));
}

void sequence_insert_cpu(CpuContext& ctx) {
  TensorSequence seq = ctx.sequence_input(0);
  const Tensor& t = tensor_input(ctx, 1);
  check_element_dtype(ctx, seq, t);
  const int64_t len = static_cast<int64_t>(seq.size());
  const int64_t pos = ctx.has_input(2) ? position(ctx, 2, len, 1) : len;
  seq.insert(seq.begin() + pos, t);
  ctx.set_sequence_output(0, std::move(seq));
}

void sequence_at_cpu(CpuContext& ctx) {
  const TensorSequence& seq = ctx.sequence_input(0);
  ctx.outputs[0] = seq[static_cast<size_t>(position(ctx, 1, static_cast<int64_t>(seq.size()), 0))];
}

void sequence_erase_cpu(CpuContext& ctx) {
  TensorSequence seq = ctx.sequence_input(0);
  const int64_t len = static_cast<int64_t>(seq.size());
  KILNRT_CHECK(ctx.has_input(1) || len > 0, kInvalidArgument, ctx.node.describe(),
               "cannot erase from an empty sequence");
  const int64_t pos = ctx.has_input(1) ? position(ctx, 1, len, 0) : len - 1;
  seq.erase(seq.begin() + pos);
  ctx.set_sequence_output(0, std::move(seq));
}

void sequence_length_cpu(CpuContext& ctx) {
  const int64_t n = static_cast<int64_t>(ctx.sequence_input(0).size());
  ctx.outputs[0] = Tensor::from_vector(std::vector<int64_t>{n}, DType::kInt64, {});
}

// Rows [begin, begin + count) of `x` along `axis`, as a new tensor of shape `out_shape`.
Tensor copy_range(const Tensor& x, int64_t axis, int64_t begin, int64_t count, const Shape& out_shape) {
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(x.dtype()));
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape()[i];
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  const int64_t len = x.shape()[axis];
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  auto* dst = static_cast<char*>(out.raw());
  const auto* src = static_cast<const char*>(x.raw());
  const int64_t row = count * inner;
  for (int64_t o = 0; o < outer && row > 0; ++o)
    std::memcpy(dst + o * row, src + (o * len + begin) * inner, static_cast<size_t>(row));
  return out;
}

void split_to_sequence_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const Tensor& x = tensor_input(ctx, 0);
  KILNRT_CHECK(x.rank() >= 1, kInvalidArgument, node.describe(), "SplitToSequence needs an input of rank >= 1");
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), x.rank(), node);
  const int64_t dim = x.shape()[axis];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!ctx.has_input(1)) {
    sizes.assign(static_cast<size_t>(dim), 1);
    squeeze = node.attr_int("keepdims", 1) == 0;
  } else {
    const Tensor& split = ctx.input(1);
    const std::vector<int64_t> v = tensor_to_int64s(split);
    if (split.rank() == 0) {
      KILNRT_CHECK(v[0] > 0, kInvalidArgument, node.describe(), "split must be positive, is " << v[0]);
      for (int64_t done = 0; done < dim; done += v[0]) sizes.push_back(std::min(v[0], dim - done));
    } else {
      KILNRT_CHECK(split.rank() == 1, kInvalidArgument, node.describe(), "split must be a scalar or 1-D");
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
  TensorSequence seq;
  int64_t begin = 0;
  for (int64_t n : sizes) {
    Shape s = x.shape();
    s[axis] = n;
    if (squeeze) s.erase(s.begin() + axis);
    seq.push_back(copy_range(x, axis, begin, n, s));
    begin += n;
  }
  ctx.set_sequence_output(0, std::move(seq));
}

void concat_from_sequence_cpu(CpuContext& ctx) {
  const ir::Node& node = ctx.node;
  const TensorSequence& seq = ctx.sequence_input(0);
  KILNRT_CHECK(!seq.empty(), kInvalidArgument, node.describe(), "cannot concatenate an empty sequence");
  const bool new_axis = node.attr_int("new_axis", 0) != 0;
  const Tensor& first = seq[0];
  const int64_t rank = first.rank() + (new_axis ? 1 : 0);
  KILNRT_CHECK(rank >= 1, kInvalidArgument, node.describe(), "cannot concatenate scalars without new_axis=1");
  const int64_t axis = normalize_axis(node.attr_int("axis"), rank, node);
  // Every element viewed with the concat axis present (new_axis: a dim of 1 inserted).
  Shape out_shape = first.shape();
  if (new_axis)
    out_shape.insert(out_shape.begin() + axis, 0);
  else
    out_shape[axis] = 0;
  std::vector<Shape> parts;
  for (size_t k = 0; k < seq.size(); ++k) {
    const Tensor& t = seq[k];
    KILNRT_CHECK(t.dtype() == first.dtype() && t.rank() == first.rank(), kInvalidArgument, node.describe(),
                 "sequence element " << k << " (" << dtype_name(t.dtype()) << " " << shape_to_string(t.shape())
                                     << ") does not match element 0 (" << dtype_name(first.dtype()) << " "
                                     << shape_to_string(first.shape()) << ")");
    Shape s = t.shape();
    if (new_axis) s.insert(s.begin() + axis, 1);
    for (int64_t d = 0; d < rank; ++d)
      KILNRT_CHECK(d == axis || s[d] == out_shape[d], kInvalidArgument, node.describe(),
                   "sequence element " << k << " has shape " << shape_to_string(t.shape()) << ", element 0 has "
                                       << shape_to_string(first.shape()) << ": they differ outside axis " << axis);
    KILNRT_CHECK(s[axis] <= std::numeric_limits<int64_t>::max() - out_shape[axis], kInvalidArgument, node.describe(),
                 "the concatenated axis is too long");
    out_shape[axis] += s[axis];
    parts.push_back(std::move(s));
  }
  Tensor out = Tensor::empty(first.dtype(), out_shape);
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(first.dtype()));
  for (int64_t i = 0; i < axis; ++i) outer *= out_shape[i];
  for (int64_t i = axis + 1; i < rank; ++i) inner *= out_shape[i];
  const int64_t out_row = out_shape[axis] * inner;
  auto* dst = static_cast<char*>(out.raw());
  int64_t offset = 0;
  for (size_t k = 0; k < seq.size(); ++k) {
    const int64_t row = parts[k][axis] * inner;
    const auto* src = static_cast<const char*>(seq[k].raw());
    for (int64_t o = 0; o < outer && row > 0; ++o)
      std::memcpy(dst + o * out_row + offset, src + o * row, static_cast<size_t>(row));
    offset += row;
  }
  ctx.outputs[0] = std::move(out);
}

const std::vector<DType> kAll = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt8,
                                 DType::kInt16,   DType::kInt32,   DType::kInt64,    DType::kUInt8,   DType::kUInt16,
                                 DType::kUInt32,  DType::kUInt64,  DType::kBool};

KILNRT_REGISTER_OP(OpSchema{"", "SequenceEmpty", 11, 1000, sequence_empty_infer, sequence_empty_cpu, kAll,
                            "an empty sequence of the `dtype` attribute (host container)"});
KILNRT_REGISTER_OP(OpSchema{"", "SequenceConstruct", 11, 1000, sequence_construct_infer, sequence_construct_cpu, kAll,
                            "a sequence of the inputs (same dtype), in order"});
KILNRT_REGISTER_OP(OpSchema{"", "SequenceInsert", 11, 1000, sequence_insert_infer, sequence_insert_cpu, kAll,
                            "inserts a tensor at `position` (default: the end; negative counts from the end)"});
KILNRT_REGISTER_OP(OpSchema{"", "SequenceAt", 11, 1000, sequence_at_infer, sequence_at_cpu, kAll,
                            "the element at `position` (negative counts from the end; out of range is an error)"});
KILNRT_REGISTER_OP(OpSchema{"", "SequenceErase", 11, 1000, sequence_erase_infer, sequence_erase_cpu, kAll,
                            "removes the element at `position` (default: the last)"});
KILNRT_REGISTER_OP(OpSchema{"", "SequenceLength", 11, 1000, sequence_length_infer, sequence_length_cpu, kAll,
                            "the number of elements, an int64 scalar"});
KILNRT_REGISTER_OP(OpSchema{"", "SplitToSequence", 11, 1000, split_to_sequence_infer, split_to_sequence_cpu, kAll,
                            "splits along `axis`: pieces of 1 (keepdims), a scalar chunk size (last one smaller) "
                            "or a list of sizes"});
KILNRT_REGISTER_OP(OpSchema{"", "ConcatFromSequence", 11, 1000, concat_from_sequence_infer, concat_from_sequence_cpu,
                            kAll, "concatenates the elements along `axis`, or stacks them on a new axis (new_axis=1)"});

}  // namespace
}  // namespace kilnrt::ops
