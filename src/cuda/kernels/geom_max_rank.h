// The rank limit of the geometry kernels that index N-D boxes (ops/shape/center_crop_pad/cuda,
// ops/shape/tensor_scatter/cuda: ranks; ops/nn/col2im/cuda: spatial dims). Plain C++.
#pragma once

namespace kilnrt::cuda::kernels::geom {

constexpr int kMaxRank = 8;  // CenterCropPad / TensorScatter ranks, Col2Im spatial dims

}  // namespace kilnrt::cuda::kernels::geom
