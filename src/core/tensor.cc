#include "kilnrt/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "core/check.h"
#include "core/failure_injection.h"

namespace kilnrt {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    KILNRT_CHECK(d >= 0, kInvalidArgument, "", "negative dimension " << d << " in shape " << shape_to_string(shape));
    if (d == 0) return 0;
    KILNRT_CHECK(n <= std::numeric_limits<int64_t>::max() / d, kInvalidArgument, "",
                 "shape " << shape_to_string(shape) << " has too many elements");
    n *= d;
  }
  return n;
}

std::string shape_to_string(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += "x";
    s += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return s;
}

namespace {
std::shared_ptr<void> allocate_aligned(size_t nbytes) {
  const size_t alignment = 64;
  size_t padded = (nbytes + alignment - 1) / alignment * alignment;
  if (padded == 0) padded = alignment;
  failure_injection::on_host_allocation(nbytes, "tensor");
  void* p = std::aligned_alloc(alignment, padded);
  if (!p) {
    KILNRT_THROW(kOutOfMemory, "", "could not allocate " << nbytes << " bytes of host memory");
  }
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}
}  // namespace

Tensor Tensor::empty(DType dtype, const Shape& shape) {
  KILNRT_CHECK(dtype_size(dtype) > 0, kInvalidArgument, "", "cannot create a tensor of dtype " << dtype_name(dtype));
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.numel_ = shape_numel(shape);
  KILNRT_CHECK(static_cast<uint64_t>(t.numel_) <= (uint64_t(1) << 62) / dtype_size(dtype), kOutOfMemory, "",
               "tensor of shape " << shape_to_string(shape) << " is too large");
  t.storage_ = allocate_aligned(t.nbytes());
  t.data_ = t.storage_.get();
  return t;
}

Tensor Tensor::zeros(DType dtype, const Shape& shape) {
  Tensor t = empty(dtype, shape);
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::borrow(void* data, DType dtype, const Shape& shape, std::shared_ptr<void> keep_alive) {
  KILNRT_CHECK(dtype_size(dtype) > 0, kInvalidArgument, "", "cannot create a tensor of dtype " << dtype_name(dtype));
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.numel_ = shape_numel(shape);
  KILNRT_CHECK(data != nullptr || t.numel_ == 0, kInvalidArgument, "", "null data pointer for a non-empty tensor");
  t.data_ = data;
  t.storage_ = std::move(keep_alive);
  return t;
}

Tensor Tensor::from_data(const void* src, DType dtype, const Shape& shape) {
  Tensor t = empty(dtype, shape);
  if (t.nbytes()) std::memcpy(t.data_, src, t.nbytes());
  return t;
}

Tensor Tensor::reshaped(const Shape& shape) const {
  KILNRT_CHECK(shape_numel(shape) == numel_, kInvalidArgument, "",
               "cannot reshape " << shape_to_string(shape_) << " to " << shape_to_string(shape));
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return Tensor();
  return from_data(data_, dtype_, shape_);
}

}  // namespace kilnrt
