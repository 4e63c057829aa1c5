// Lazy loader for the CUDA libraries kilnrt uses beside the driver: cuDNN, cuBLASLt and NVRTC. Nothing is loaded at
// library load time; the first call for a library searches, in order:
//   1. already loaded in the process (dlopen RTLD_NOLOAD by soname — e.g. torch loaded its own copies),
//   2. directories in KILNRT_NVIDIA_LIB_DIRS (':'-separated),
//   3. pip's nvidia/* packages in site-packages directories found cheaply (next to libkilnrt, the running
//      interpreter's prefix, VIRTUAL_ENV / CONDA_PREFIX, the user site), only when a Python runs in the process,
//   4. the system (dlopen by soname: LD_LIBRARY_PATH, ld.so.cache, RUNPATH).
// The result — where it was found and its version, or why it is missing — is remembered for the process and
// printed by doctor. A missing library disables what needs it; it never fails the import.
#pragma once
#include <string>
#include <vector>

namespace kilnrt::cuda {

enum class Library { kCudnn = 0, kCublasLt = 1, kNvrtc = 2 };
constexpr int kNumLibraries = 3;

struct LibraryInfo {
  std::string name;  // "cuDNN", "cuBLASLt", "NVRTC"
  bool found = false;
  void* handle = nullptr;      // dlopen handle (kept for the process life)
  std::string soname;          // the soname that matched
  std::string path;            // absolute path of the loaded file
  std::string source;          // "already loaded in the process", "KILNRT_NVIDIA_LIB_DIRS", "pip package", "system"
  long version = 0;            // the library's own version number (cudnnGetVersion, cublasLtGetVersion, nvrtc)
  std::string version_string;  // "9.10.2", "13.1.0", "13.0"
  std::string why_missing;     // when !found: what was tried and what to do
};

// Loads (once) and returns the library's record. Thread-safe, never throws (a failure is recorded in the record).
const LibraryInfo& library(Library lib);

// dlsym in the loaded library; nullptr when the library or the symbol is missing.
void* library_symbol(Library lib, const char* symbol);

// Like library_symbol, but throws kilnrt::Error (kUnsupported) naming the library, the symbol and why_missing.
void* require_library_symbol(Library lib, const char* symbol);

const char* library_name(Library lib);

// Runs the search again without remembering the result (tests; doctor uses library()). A handle it opens stays open.
LibraryInfo load_library_uncached(Library lib);

// The candidate directories searched for pip's nvidia/* packages (for doctor and tests). Cheap: no Python calls.
std::vector<std::string> pip_nvidia_library_dirs();

}  // namespace kilnrt::cuda
