// CUDA layers of Range and ConstantOfShape: host sources (host_source_layer.h), run only when an input is a device
// value (read at a sync point); the plan evaluates them on the host otherwise.
#include "ops/cuda/cuda_layer.h"
#include "ops/cuda/host_source_layer.h"

namespace kilnrt::backends::cuda {
namespace {

KILNRT_REGISTER_CUDA_LAYER({"Range", "ConstantOfShape"}, nullptr, make_host_source_layer);

}  // namespace
}  // namespace kilnrt::backends::cuda
