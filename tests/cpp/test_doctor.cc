// doctor_report never throws and says what it found; cuda_available gives a reason when it returns false.
#include <gtest/gtest.h>

#include <string>

#include "kilnrt/doctor.h"

TEST(Doctor, ReportNeverThrowsAndMentionsTheDriver) {
  std::string report;
  EXPECT_NO_THROW(report = kilnrt::doctor_report());
  ASSERT_FALSE(report.empty());
  EXPECT_NE(report.find("kilnrt "), std::string::npos) << report;
  EXPECT_NE(report.find("driver: "), std::string::npos) << report;
  // twice: the remembered state must give the same answer
  EXPECT_EQ(kilnrt::doctor_report().find("driver: "), report.find("driver: "));
}

TEST(Doctor, CudaAvailableExplainsWhyNot) {
  std::string why = "stale";
  bool available = kilnrt::cuda_available(&why);
  EXPECT_EQ(available, kilnrt::cuda_available(nullptr));
  std::string report = kilnrt::doctor_report();
  if (available) {
    EXPECT_TRUE(why.empty()) << why;
    EXPECT_NE(report.find("GPU 0:"), std::string::npos) << report;
  } else {
    EXPECT_FALSE(why.empty());
    EXPECT_NE(why, "stale");
    // the report says the same thing and what to do
    EXPECT_NE(report.find(why), std::string::npos) << "report:\n" << report << "\nwhy: " << why;
    EXPECT_NE(report.find("to do:"), std::string::npos) << report;
  }
}

#ifdef KILNRT_HAVE_CUDA
TEST(Doctor, ReportsLibrariesInCudaBuilds) {
  std::string report = kilnrt::doctor_report();
  EXPECT_NE(report.find("cuDNN"), std::string::npos) << report;
  EXPECT_NE(report.find("cuBLASLt"), std::string::npos) << report;
  EXPECT_NE(report.find("NVRTC"), std::string::npos) << report;
  EXPECT_NE(report.find("CUDA runtime"), std::string::npos) << report;
}
#endif
