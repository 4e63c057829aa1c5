// How CUDA engines run an op type, for `kilnrt ops` / docs/operators.md (no CUDA headers: the CLI includes it).
#pragma once
#include <string>

namespace kilnrt::backends::cuda {

// "layer" (a CUDA layer in the registry: the op runs on the GPU, subject to its support checks per node),
// "host shape computation" (Shape / Size: evaluated on the host from shapes), "host list of device tensors"
// (sequence ops: the container on the host, every tensor copy on the GPU), or "" (no CUDA path: CUDA builds refuse
// the node, naming it). Defined only in CUDA builds.
std::string op_placement(const std::string& domain, const std::string& op_type);

}  // namespace kilnrt::backends::cuda
