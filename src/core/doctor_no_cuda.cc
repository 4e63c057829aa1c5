// doctor_report / cuda_available for builds without the CUDA toolkit (CUDA builds use src/cuda/doctor.cc).
#ifndef KILNRT_HAVE_CUDA
#include <string>

#include "kilnrt/doctor.h"

#ifndef KILNRT_VERSION_STRING
#define KILNRT_VERSION_STRING "unknown"
#endif

namespace kilnrt {
namespace {
constexpr const char* kNoCudaBuild =
    "this kilnrt was built without the CUDA toolkit: only the CPU backend is available; rebuild with the CUDA "
    "toolkit installed (CMake finds it via CUDAToolkit, -DKILNRT_WITH_CUDA=ON) for GPU support";
}  // namespace

std::string doctor_report() {
  try {
    std::string r = "kilnrt ";
    r += KILNRT_VERSION_STRING;
    r += " (CPU-only build)\n";
    r += "driver: not used: ";
    r += kNoCudaBuild;
    r += "\nGPUs: none usable by this build\nlibraries: cuDNN, cuBLASLt, NVRTC are not used by this build\n";
    r += "to do:\n  - ";
    r += kNoCudaBuild;
    r += "\n";
    return r;
  } catch (...) {
    return {};
  }
}

bool cuda_available(std::string* why_not) {
  if (why_not) {
    try {
      *why_not = kNoCudaBuild;
    } catch (...) {
    }
  }
  return false;
}

}  // namespace kilnrt
#endif  // KILNRT_HAVE_CUDA
