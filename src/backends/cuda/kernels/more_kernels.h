// Host entry points of the CUDA kernels of MeanVarianceNormalization, OneHot, MaxUnpool and RoiAlign (misc_more.cu).
// Plain C++ like kernels.h; each launcher returns the launch status (0 = success); nothing here synchronises or
// reads device memory on the host (graph-capture safe).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::more {


}  // namespace kilnrt::cuda::kernels::more
