// NVRTC behind its own small function table (dlsym on the handle library_loader found: no -lnvrtc), the choice of
// compile target, and the on-disk cache of compiled code. Needs no GPU: compile_cuda() takes the target explicitly.
#pragma once
#include <nvrtc.h>

#include <memory>
#include <string>
#include <vector>

#include "kilnrt/cuda/kernel.h"

namespace kilnrt::cuda {

// X(member, symbol, required): optional entries may be nullptr (older NVRTC).
#define KILNRT_NVRTC_FUNCTIONS(X)                           \
  X(Version, nvrtcVersion, true)                            \
  X(GetErrorString, nvrtcGetErrorString, true)              \
  X(CreateProgram, nvrtcCreateProgram, true)                \
  X(DestroyProgram, nvrtcDestroyProgram, true)              \
  X(CompileProgram, nvrtcCompileProgram, true)              \
  X(GetPTXSize, nvrtcGetPTXSize, true)                      \
  X(GetPTX, nvrtcGetPTX, true)                              \
  X(GetCUBINSize, nvrtcGetCUBINSize, true)                  \
  X(GetCUBIN, nvrtcGetCUBIN, true)                          \
  X(GetProgramLogSize, nvrtcGetProgramLogSize, true)        \
  X(GetProgramLog, nvrtcGetProgramLog, true)                \
  X(AddNameExpression, nvrtcAddNameExpression, true)        \
  X(GetLoweredName, nvrtcGetLoweredName, true)              \
  X(GetNumSupportedArchs, nvrtcGetNumSupportedArchs, false) \
  X(GetSupportedArchs, nvrtcGetSupportedArchs, false)

struct NvrtcApi {
#define KILNRT_NVRTC_MEMBER(member, symbol, required) decltype(&::symbol) member = nullptr;
  KILNRT_NVRTC_FUNCTIONS(KILNRT_NVRTC_MEMBER)
#undef KILNRT_NVRTC_MEMBER
  int version = 0;                   // major * 1000 + minor * 10
  std::vector<int> supported_archs;  // 75, 80, ... (from nvrtcGetSupportedArchs; empty when unknown)
};

// Resolved once; throws kilnrt::Error (kUnsupported) naming NVRTC, what was tried and what to install.
const NvrtcApi& nvrtc_api();

struct CompileTarget {
  int arch = 0;       // 90
  bool cubin = true;  // true: -arch=sm_90 (machine code); false: -arch=compute_90 (PTX, JIT-compiled by the driver)
  std::string name() const;  // "sm_90" / "compute_90"
};

// Cubin for `device_arch` when NVRTC supports it; else PTX for the newest supported arch below it (the driver JITs
// it for the newer GPU). Throws kUnsupported when NVRTC supports no arch <= device_arch (GPU too old for it).
// `supported` empty = unknown: cubin for device_arch.
CompileTarget choose_target(int device_arch, const std::vector<int>& supported, int nvrtc_version);

// The exact bytes the cache key hashes: a format tag, NVRTC version, target, options, names and the source.
std::string compile_key_material(const std::string& source, const std::vector<std::string>& names,
                                 const std::vector<std::string>& options, const CompileTarget& target,
                                 int nvrtc_version);

// Compiles (or reads from the disk cache) `source` for `target`, lowering every name in `names`. No GPU needed.
// Errors: kCuda with NVRTC's log and the names; kUnsupported without NVRTC.
std::shared_ptr<const CompiledCode> compile_cuda(const std::string& source, const std::vector<std::string>& names,
                                                 const CompileTarget& target, const KernelCompileOptions& options = {});

// The cache directory in effect now ($KILNRT_CACHE_DIR/kernels, $XDG_CACHE_HOME/kilnrt/kernels,
// ~/.cache/kilnrt/kernels); empty when none can be determined.
std::string kernel_cache_dir();
// The cache file a key material maps to (inside kernel_cache_dir()).
std::string kernel_cache_path(const std::string& key_material);

// Cache file codec (exposed for tests). decode returns false — never throws — for anything damaged, truncated,
// of another format or of another key.
std::string encode_kernel_cache_file(const CompiledCode& code, const std::string& key_material);
bool decode_kernel_cache_file(const std::string& bytes, const std::string& key_material, CompiledCode* out);

struct NvrtcStats {
  long compilations = 0;    // NVRTC runs
  long disk_hits = 0;       // codes read from the cache
  long disk_writes = 0;     // cache files written
  long rejected_files = 0;  // damaged / foreign cache files ignored (then rebuilt)
};
NvrtcStats nvrtc_stats();

}  // namespace kilnrt::cuda
