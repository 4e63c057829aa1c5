// Whether this build's own CUDA kernels can run on a GPU. The kernels (*.cu under src/) are compiled for the
// architectures in KILNRT_CUDA_ARCHS (CMakeLists.txt: SASS for every entry, PTX for the last as well), which CMake
// passes to the library as KILNRT_CUDA_ARCHS_BUILT. On a GPU they do not cover, every kernel launch would fail with
// "no kernel image is available": doctor reports such a GPU as unusable and CUDA engine builds refuse it up front,
// naming the GPU, its compute capability, the architectures built and how to rebuild.
//
// The rule (NVIDIA's binary compatibility), for a device of compute capability X.Z:
//   - SASS for sm_XY runs on sm_XZ when Z >= Y (same major version only): sm_80 code runs on 8.0, 8.6 and 8.9, never
//     on 9.0 or 7.5;
//   - PTX for compute_XY is JIT-compiled by the driver for any GPU of compute capability >= X.Y (forward only);
//   - arch-specific entries ("90a": sm_90a, Hopper's wgmma) run on exactly that compute capability and their PTX
//     does not carry forward; family entries ("100f") run as SASS within their major version and their PTX does not
//     carry forward either.
// Entries are CMake CUDA_ARCHITECTURES values: "86", "86-real" (SASS only), "86-virtual" (PTX only). The last
// plain entry also gets PTX (CMakeLists.txt builds it without -real). An empty list, or one holding CMake's special
// values ("native", "all", "all-major"), cannot be judged and counts as covered.
#pragma once
#include <string>

namespace kilnrt::cuda {

// KILNRT_CUDA_ARCHS as this library was built with, entries separated by ';' ("80;90"); "" when unknown.
std::string cuda_archs_built();

// The pure decision for compute capability major.minor against an architecture list ("80;90"; ',' and spaces
// separate entries too).
bool arch_list_covers(int major, int minor, const std::string& archs);

// "sm_80, sm_90 + PTX 9.0": what the list builds, for messages.
std::string describe_arch_list(const std::string& archs);

// The list to rebuild with so that major.minor is covered: the list with the device's architecture added, sorted
// ("75;80;90" for 7.5 and "80;90").
std::string arch_list_with(int major, int minor, const std::string& archs);

// "" when covered, else the message: "GPU 0 (NVIDIA T4, compute capability 7.5) is not covered by this build's CUDA
// kernels (built for sm_80, sm_90 + PTX 9.0): rebuild with -DKILNRT_CUDA_ARCHS="75;80;90" (scripts/setup.sh
// -DKILNRT_CUDA_ARCHS=...)". Pure: no GPU needed.
std::string arch_coverage_message(int device, const std::string& gpu_name, int major, int minor,
                                  const std::string& archs);

// The same for a visible device against cuda_archs_built(), its name and compute capability read through the driver
// table. Throws kilnrt::Error (kCuda / kInvalidArgument) when the driver cannot describe the device.
std::string arch_coverage_problem(int device);

}  // namespace kilnrt::cuda
