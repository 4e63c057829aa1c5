// How CUDA engines run an op type (cuda_op_support.h), for `kilnrt ops` and docs/operators.md.
#include "backends/cuda/cuda_op_support.h"
#include "backends/cuda/plan_internal.h"
#include "ops/cuda/cuda_layer.h"
#include "ops/sequence/sequence_support.h"

namespace kilnrt::backends::cuda {

std::string op_placement(const std::string& domain, const std::string& op_type) {
  if (plan_detail::always_host(op_type)) return "host shape computation";
  if (op_type == "Constant") return "host constant, uploaded once";  // no inputs: a host value of the plan
  if (ops::is_sequence_op(op_type)) return "host list of device tensors";
  return LayerRegistry::instance().find(domain, op_type) ? "layer" : "";
}

}  // namespace kilnrt::backends::cuda
