// A host tensor: dtype, shape and a reference-counted buffer (owned, or borrowed from the caller).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kilnrt/dtype.h"

namespace kilnrt {

using Shape = std::vector<int64_t>;

// Number of elements of a shape (1 for a scalar, 0 if any dim is 0). Throws on negative dims or overflow.
int64_t shape_numel(const Shape& shape);
// "1x3x224x224" ("scalar" for rank 0).
std::string shape_to_string(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Allocates an uninitialised buffer (64-byte aligned).
  static Tensor empty(DType dtype, const Shape& shape);
  static Tensor zeros(DType dtype, const Shape& shape);
  // Wraps memory the caller owns; `keep_alive` (may be null) is held as long as any copy of the tensor lives.
  static Tensor borrow(void* data, DType dtype, const Shape& shape, std::shared_ptr<void> keep_alive = nullptr);
  // Copies `nbytes` from `src` into a new tensor.
  static Tensor from_data(const void* src, DType dtype, const Shape& shape);
  template <typename T>
  static Tensor from_vector(const std::vector<T>& v, DType dtype, const Shape& shape) {
    return from_data(v.data(), dtype, shape);
  }

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_[i < 0 ? i + rank() : i]; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }

  // Same buffer, new shape with the same element count.
  Tensor reshaped(const Shape& shape) const;
  // Deep copy.
  Tensor clone() const;

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  int64_t numel_ = 0;
  void* data_ = nullptr;
  std::shared_ptr<void> storage_;
};

}  // namespace kilnrt
