// backends/cuda/cuda_op_support.h: the CUDA column of `kilnrt ops` / docs/operators.md (host test, no GPU needed).
#include <gtest/gtest.h>

#include "backends/cuda/cuda_op_support.h"
#include "ops/op_registry.h"

using kilnrt::backends::cuda::op_placement;

TEST(CudaOpSupport, PlacementOfKnownOps) {
  EXPECT_EQ(op_placement("", "Conv"), "layer");
  EXPECT_EQ(op_placement("", "Loop"), "layer");
  EXPECT_EQ(op_placement("", "Shape"), "host shape computation");
  EXPECT_EQ(op_placement("", "SequenceAt"), "host list of device tensors");
  EXPECT_EQ(op_placement("", "NoSuchOp"), "");
}

// Every op of the registry has a CUDA path (the CUDA backend implements every op the CPU backend supports).
TEST(CudaOpSupport, EveryRegistryOpHasACudaPath) {
  // (Custom ops that other tests register at run time run through the custom-op layer: not part of this check.)
  for (const kilnrt::ops::OpSchema* s : kilnrt::ops::OpRegistry::instance().all())
    if (s->domain.empty() || s->domain.rfind("ai.onnx", 0) == 0 || s->domain == "com.microsoft")
      EXPECT_FALSE(op_placement(s->domain, s->op_type).empty()) << s->domain << "::" << s->op_type;
}
