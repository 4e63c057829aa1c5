// Sequence values on the CUDA backend: not supported yet, so building a CUDA engine of a model that uses them fails
// with a kUnsupported error naming the node (ops::check_no_sequences in the builder); the same model builds and runs
// as a CPU engine (tests/cpp/test_sequence_ops.cc). Skips with a message without a usable GPU.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cuda_backend_test_util.h"
#include "kilnrt/engine.h"
#include "sequence_test_model.h"

using namespace kilnrt;

namespace {

TEST(CudaSequences, BuildFailsNamingTheSequenceNode) {
  KILNRT_SKIP_WITHOUT_GPU();
  const std::string path = ::testing::TempDir() + "/kilnrt_cuda_sequence_list_model.onnx";
  std::ofstream(path, std::ios::binary) << seqtest::list_model().serialize();
  BuildOptions opt;
  opt.device = "cuda";
  try {
    build_engine(path, opt);
    FAIL() << "expected the CUDA build to refuse sequence values";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("Sequence"), std::string::npos) << e.what();  // the first sequence node
    EXPECT_NE(std::string(e.what()).find("not supported on CUDA yet"), std::string::npos) << e.what();
  }
}

}  // namespace
