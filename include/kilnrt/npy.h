// Reading and writing NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order) for kilnrt tensors.
#pragma once
#include <string>

#include "kilnrt/tensor.h"

namespace kilnrt {
Tensor load_npy(const std::string& path);
void save_npy(const std::string& path, const Tensor& tensor);
}  // namespace kilnrt
