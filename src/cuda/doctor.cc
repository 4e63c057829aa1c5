// doctor_report / cuda_available for CUDA builds. Never throws; never creates a context (it retains primary
// contexts through the guard to read free memory, like any other kilnrt GPU entry).
#include <cuda_runtime_api.h>

#include <sstream>
#include <string>
#include <vector>

#include "cuda/arch_coverage.h"
#include "cuda/context_guard.h"
#include "cuda/driver_api.h"
#include "cuda/library_loader.h"
#include "kilnrt/doctor.h"

#ifndef KILNRT_VERSION_STRING
#define KILNRT_VERSION_STRING "unknown"
#endif

namespace kilnrt {
namespace {

std::string cuda_version(int v) {
  std::ostringstream os;
  os << v / 1000 << "." << (v % 1000) / 10;
  return os.str();
}

std::string mib(size_t bytes) {
  std::ostringstream os;
  os << bytes / (1024 * 1024) << " MiB";
  return os.str();
}

void report_context_state(std::ostringstream& os, const cuda::DriverApi& api, int count) {
  CUcontext current = nullptr;
  CUresult r = api.CtxGetCurrent(&current);
  os << "calling thread's context: ";
  if (r != CUDA_SUCCESS) {
    os << "unknown (" << cuda::driver_error_string(api, r) << ")\n";
    return;
  }
  if (!current) {
    os << "none current (kilnrt pushes the device's primary context around each call)\n";
    return;
  }
  os << current;
  for (int d = 0; d < count; ++d) {
    if (cuda::retained_primary_context(d) == current) {
      os << " = primary context of device " << d << "\n";
      return;
    }
  }
  os << " (not a primary context kilnrt retained: a user context or another device's; kilnrt pushes and pops "
        "its own, leaving this one current)\n";
}

void report_gpus(std::ostringstream& os, const cuda::DriverApi& api, int count, std::vector<std::string>& todo) {
  for (int d = 0; d < count; ++d) {
    CUdevice dev = 0;
    CUresult r = api.DeviceGet(&dev, d);
    if (r != CUDA_SUCCESS) {
      os << "  GPU " << d << ": " << cuda::driver_error_string(api, r) << "\n";
      continue;
    }
    char name[256] = {0};
    api.DeviceGetName(name, sizeof(name) - 1, dev);
    int major = 0, minor = 0, sms = 0;
    api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    api.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    size_t total = 0;
    api.DeviceTotalMem(&total, dev);
    os << "  GPU " << d << ": " << name << ", sm_" << major << minor << ", " << sms << " SMs, " << mib(total)
       << " total";
    try {
      cuda::ContextGuard guard(d);
      size_t free_b = 0, total_b = 0;
      CUresult mr = api.MemGetInfo(&free_b, &total_b);
      if (mr == CUDA_SUCCESS)
        os << ", " << mib(free_b) << " free";
      else
        os << ", free memory unknown (" << cuda::driver_error_string(api, mr) << ")";
    } catch (const std::exception& e) {
      os << ", free memory unknown (" << e.what() << ")";
    }
    os << "\n";
    // The build's own kernels must cover the GPU (SASS of its major version, or PTX it can JIT): else unusable.
    const std::string not_covered = cuda::arch_coverage_message(d, name, major, minor, cuda::cuda_archs_built());
    if (!not_covered.empty()) {
      os << "    unusable with this build: " << not_covered << "\n";
      todo.push_back(not_covered);
    }
    if (major * 10 + minor < 75)
      todo.push_back("GPU " + std::to_string(d) + " (sm_" + std::to_string(major) + std::to_string(minor) +
                     ") is older than kilnrt supports (sm_75+: CUDA 13 dropped sm_70 and older)");
  }
}

void report_library(std::ostringstream& os, cuda::Library lib, std::vector<std::string>& todo) {
  const cuda::LibraryInfo& info = cuda::library(lib);
  os << "  " << info.name << ": ";
  if (!info.found) {
    os << "missing\n";
    todo.push_back(info.why_missing);
    return;
  }
  os << info.version_string << " at " << info.path << " (" << info.source << ")\n";
  int runtime_major = CUDART_VERSION / 1000;
  if (lib != cuda::Library::kCudnn && info.version > 0) {
    long major = lib == cuda::Library::kNvrtc ? info.version / 1000 : info.version / 10000;
    if (major != runtime_major)
      todo.push_back(std::string(info.name) + " " + info.version_string + " is from CUDA " + std::to_string(major) +
                     " while kilnrt was built with CUDA " + std::to_string(runtime_major) +
                     ": it works where the driver supports both, but prefer the CUDA " + std::to_string(runtime_major) +
                     " package");
  }
}

std::string build_report() {
  std::ostringstream os;
  std::vector<std::string> todo;
  os << "kilnrt " << KILNRT_VERSION_STRING << " (CUDA build)\n";
  os << "CUDA runtime (static, built with): " << cuda_version(CUDART_VERSION) << "\n";
  os << "CUDA kernels built for: " << cuda::describe_arch_list(cuda::cuda_archs_built()) << "\n";
  if (cuda::forked_after_cuda_init()) {
    os << "process: a child forked after CUDA was initialised in the parent: GPU use is refused here\n";
    todo.push_back(cuda::forked_child_message());
  } else {
    os << "process: " << (cuda::cuda_initialised() ? "CUDA initialised" : "CUDA not initialised yet")
       << ", not a forked child of a CUDA process\n";
  }

  std::string why;
  const cuda::DriverApi* api = cuda::forked_after_cuda_init() ? nullptr : cuda::try_driver_api(&why);
  int count = 0;
  if (!api) {
    os << "driver: unavailable: " << why << "\n";
    if (!cuda::forked_after_cuda_init()) todo.push_back(why);
  } else {
    int v = 0;
    if (api->DriverGetVersion(&v) == CUDA_SUCCESS)
      os << "driver: supports CUDA " << cuda_version(v) << "\n";
    else
      os << "driver: loaded (version unknown)\n";
    CUresult r = api->DeviceGetCount(&count);
    if (r != CUDA_SUCCESS) {
      os << "GPUs: cannot count (" << cuda::driver_error_string(*api, r) << ")\n";
      count = 0;
    }
    os << "GPUs: " << count << "\n";
    if (count == 0) todo.push_back("no GPU is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES");
    report_gpus(os, *api, count, todo);
    // After report_gpus: the primary contexts are retained now, so a current primary context is recognised.
    report_context_state(os, *api, count);
  }

  os << "libraries:\n";
  report_library(os, cuda::Library::kCudnn, todo);
  report_library(os, cuda::Library::kCublasLt, todo);
  report_library(os, cuda::Library::kNvrtc, todo);

  if (todo.empty()) {
    os << "status: everything kilnrt's CUDA backend needs was found\n";
  } else {
    os << "to do:\n";
    for (const auto& t : todo) os << "  - " << t << "\n";
  }
  return os.str();
}

}  // namespace

std::string doctor_report() {
  try {
    return build_report();
  } catch (const std::exception& e) {
    try {
      return std::string("kilnrt doctor failed: ") + e.what() + "\n";
    } catch (...) {
      return {};
    }
  } catch (...) {
    return "kilnrt doctor failed\n";
  }
}

bool cuda_available(std::string* why_not) {
  try {
    std::string why;
    const cuda::DriverApi* api = cuda::try_driver_api(&why);
    if (!api) {
      if (why_not) *why_not = why;
      return false;
    }
    int count = 0;
    CUresult r = api->DeviceGetCount(&count);
    if (r != CUDA_SUCCESS) {
      if (why_not) *why_not = "cuDeviceGetCount failed: " + cuda::driver_error_string(*api, r);
      return false;
    }
    if (count == 0) {
      if (why_not) *why_not = "the CUDA driver sees no GPU (check nvidia-smi and CUDA_VISIBLE_DEVICES)";
      return false;
    }
    if (why_not) why_not->clear();
    return true;
  } catch (const std::exception& e) {
    if (why_not) *why_not = e.what();
    return false;
  } catch (...) {
    if (why_not) *why_not = "unknown error";
    return false;
  }
}

}  // namespace kilnrt
