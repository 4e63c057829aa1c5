// kilnrt::cuda::Kernel: CUDA C++ source compiled at run time with NVRTC (loaded lazily: no -lnvrtc), loaded into a
// device's primary context under kilnrt's context guard, and launched with typed arguments.
//
//   auto k = Kernel::compile(0, R"(extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {...})",
//                            "saxpy");
//   k.launch({blocks}, {256}, 0, stream, 2.0f, x_ptr, y_ptr, n);   // argument types must match the kernel's exactly
//
// Compiled code is cached on disk (keyed by source, options, target arch and NVRTC version) in
// $KILNRT_CACHE_DIR/kernels, else $XDG_CACHE_HOME/kilnrt/kernels, else ~/.cache/kilnrt/kernels; loaded modules are
// shared in the process per (code, device). See docs/cuda-safety.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kilnrt/cuda/stream.h"

struct CUfunc_st;

namespace kilnrt::cuda {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  Dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}  // NOLINT: implicit from int
};

// Machine code or PTX produced by NVRTC (or read from the cache / an engine file).
struct CompiledCode {
  enum class Kind : uint32_t { kCubin = 1, kPtx = 2 };
  Kind kind = Kind::kCubin;
  std::string image;                       // cubin bytes, or PTX text
  int arch = 0;                            // 90 for sm_90 (cubin) / compute_90 (PTX)
  int nvrtc_version = 0;                   // major * 1000 + minor * 10
  std::vector<std::string> names;          // the kernel names (name expressions) asked for
  std::vector<std::string> lowered_names;  // their mangled names in the image, same order
  bool from_disk_cache = false;
  // The mangled name of `name` (one of `names`); throws kInvalidArgument when it was not compiled.
  const std::string& lowered_name(const std::string& name) const;
  std::string target_name() const;  // "sm_90" or "compute_90"
};

struct KernelCompileOptions {
  std::vector<std::string> nvrtc_options;         // e.g. "--std=c++17", "--use_fast_math", "-DTILE=16"
  bool disk_cache = true;                         // read / write the on-disk cache
  std::string program_name = "kilnrt_kernel.cu";  // shown in NVRTC's log
};

class Kernel {
 public:
  Kernel() noexcept = default;

  // Compiles `source` for `device`'s architecture (cubin when NVRTC supports it, else PTX for the newest arch it
  // supports, JIT-compiled by the driver) and gets the kernel `name`: an extern "C" name, or a C++ name expression
  // such as "scale<float>". Compile errors throw kilnrt::Error (kCuda) with NVRTC's log and the kernel name; a
  // missing NVRTC throws kUnsupported saying what to install.
  static Kernel compile(int device, const std::string& source, const std::string& name,
                        const KernelCompileOptions& options = {});
  // Loads code compiled earlier (e.g. stored in an engine file) and gets `name` (one of code->names).
  static Kernel load(int device, std::shared_ptr<const CompiledCode> code, const std::string& name);

  // Launches on `stream` (a stream of `device`'s primary context, or 0 for its legacy default stream). Each argument
  // is passed by address to cuLaunchKernel: its type must be exactly the kernel parameter's type (float, not double;
  // int, not size_t; T* / CUdeviceptr for pointers).
  template <class... Args>
  void launch(Dim3 grid, Dim3 block, unsigned shared_mem_bytes, StreamHandle stream, const Args&... args) const {
    static_assert((std::is_trivially_copyable<Args>::value && ...),
                  "kernel arguments must be trivially copyable values (pass device pointers, not buffers)");
    void* params[] = {const_cast<void*>(static_cast<const void*>(&args))..., nullptr};
    launch_raw(grid, block, shared_mem_bytes, stream, params);
  }
  // cuLaunchKernel with an explicit parameter array (pointers to each argument).
  void launch_raw(Dim3 grid, Dim3 block, unsigned shared_mem_bytes, StreamHandle stream, void** params) const;

  explicit operator bool() const noexcept { return function_ != nullptr; }
  CUfunc_st* function() const noexcept { return function_; }
  int device() const noexcept { return device_; }
  const std::string& name() const noexcept { return name_; }
  // The code the module was loaded from (store it in an engine file to skip NVRTC at load).
  const std::shared_ptr<const CompiledCode>& code() const noexcept { return code_; }

  // Opaque: keeps the loaded module alive (shared by every Kernel of the same code on the same device).
  struct Module;

 private:
  std::shared_ptr<Module> module_;
  std::shared_ptr<const CompiledCode> code_;
  CUfunc_st* function_ = nullptr;
  int device_ = -1;
  std::string name_;
};

// The compute capability of `device` as 10 * major + minor (90 for an H100).
int device_compute_capability(int device);

}  // namespace kilnrt::cuda
