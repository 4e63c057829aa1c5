// The GPU architecture coverage rule of src/cuda/arch_coverage.h, without a GPU: SASS sm_XY runs on sm_XZ with
// Z >= Y of the same major version, PTX JITs to any newer GPU, arch-specific code (sm_90a) runs on its GPU alone and
// its PTX does not carry forward. CUDA builds only (the function lives in the CUDA part of the library).
#ifdef KILNRT_HAVE_CUDA
#include "cuda/arch_coverage.h"

#include <gtest/gtest.h>

#include <string>

#include "kilnrt/doctor.h"

namespace kc = kilnrt::cuda;

TEST(ArchCoverage, ExactSassCovers) {
  EXPECT_TRUE(kc::arch_list_covers(9, 0, "80;90"));
  EXPECT_TRUE(kc::arch_list_covers(8, 0, "80;90"));
  EXPECT_TRUE(kc::arch_list_covers(7, 5, "75;80;90"));
}

TEST(ArchCoverage, SassRunsOnNewerMinorOfTheSameMajor) {
  EXPECT_TRUE(kc::arch_list_covers(8, 6, "80;90"));  // A10 / RTX 30xx run sm_80 SASS
  EXPECT_TRUE(kc::arch_list_covers(8, 9, "80;90"));  // L4 / RTX 40xx
  EXPECT_TRUE(kc::arch_list_covers(8, 9, "80-real;86-real"));
  EXPECT_FALSE(kc::arch_list_covers(8, 0, "86-real;90-real"));  // never on an older minor
}

TEST(ArchCoverage, OlderGpuIsNotCovered) {
  EXPECT_FALSE(kc::arch_list_covers(7, 5, "80;90"));  // T4 with the default list
  EXPECT_FALSE(kc::arch_list_covers(7, 0, "75;80;90"));
}

TEST(ArchCoverage, PtxOfTheLastEntryJitsForward) {
  EXPECT_TRUE(kc::arch_list_covers(12, 0, "80;90"));  // Blackwell through PTX 9.0
  EXPECT_TRUE(kc::arch_list_covers(10, 0, "80;90"));
  // SASS alone does not cross a major version.
  EXPECT_FALSE(kc::arch_list_covers(12, 0, "80-real;90-real"));
  EXPECT_FALSE(kc::arch_list_covers(9, 0, "80-real;86-real"));
  // PTX only for the last entry: the others are built as -real.
  EXPECT_FALSE(kc::arch_list_covers(9, 0, "80;86-real"));
  EXPECT_TRUE(kc::arch_list_covers(9, 0, "80-virtual"));
}

TEST(ArchCoverage, ArchSpecificCodeIsNotPortablePtx) {
  EXPECT_TRUE(kc::arch_list_covers(9, 0, "90a"));    // sm_90a SASS runs on Hopper itself
  EXPECT_FALSE(kc::arch_list_covers(10, 0, "90a"));  // but its PTX does not JIT forward
  EXPECT_FALSE(kc::arch_list_covers(12, 0, "90a"));
  EXPECT_FALSE(kc::arch_list_covers(10, 3, "100a"));  // arch-specific: exactly 10.0
  EXPECT_TRUE(kc::arch_list_covers(10, 3, "100f"));   // family: 10.x with x >= 0
  EXPECT_FALSE(kc::arch_list_covers(12, 0, "100f"));
}

TEST(ArchCoverage, UnjudgeableListsCountAsCovered) {
  EXPECT_TRUE(kc::arch_list_covers(7, 5, ""));
  EXPECT_TRUE(kc::arch_list_covers(7, 5, "native"));
  EXPECT_TRUE(kc::arch_list_covers(7, 5, "all-major"));
}

TEST(ArchCoverage, SeparatorsAndDescription) {
  EXPECT_FALSE(kc::arch_list_covers(7, 5, "80,90"));
  EXPECT_TRUE(kc::arch_list_covers(8, 6, " 80 , 90 "));
  EXPECT_EQ(kc::describe_arch_list("80;90"), "sm_80, sm_90 + PTX 9.0");
  EXPECT_EQ(kc::describe_arch_list("75;80;86;89;90"), "sm_75, sm_80, sm_86, sm_89, sm_90 + PTX 9.0");
  EXPECT_EQ(kc::describe_arch_list("90a"), "sm_90a");
  EXPECT_EQ(kc::arch_list_with(7, 5, "80;90"), "75;80;90");
  EXPECT_EQ(kc::arch_list_with(12, 0, "80-real;90-real"), "80-real;90-real;120");
}

TEST(ArchCoverage, MessageNamesGpuCapabilityArchsAndRebuild) {
  EXPECT_EQ(kc::arch_coverage_message(0, "NVIDIA T4", 9, 0, "80;90"), "");
  EXPECT_EQ(kc::arch_coverage_message(0, "NVIDIA T4", 7, 5, "80;90"),
            "GPU 0 (NVIDIA T4, compute capability 7.5) is not covered by this build's CUDA kernels (built for sm_80, "
            "sm_90 + PTX 9.0): rebuild with -DKILNRT_CUDA_ARCHS=\"75;80;90\" (scripts/setup.sh "
            "-DKILNRT_CUDA_ARCHS=...)");
}

TEST(ArchCoverage, BuildKnowsItsArchitecturesAndCoversTheTestGpu) {
  // CMakeLists.txt passes KILNRT_CUDA_ARCHS to the library.
  EXPECT_FALSE(kc::cuda_archs_built().empty());
  EXPECT_EQ(kc::cuda_archs_built().find(','), std::string::npos) << kc::cuda_archs_built();
  if (!kilnrt::cuda_available(nullptr)) GTEST_SKIP() << "no usable CUDA GPU";
  EXPECT_EQ(kc::arch_coverage_problem(0), "");
}
#endif  // KILNRT_HAVE_CUDA
