// Lazy, remembered loading of cuDNN / cuBLASLt / NVRTC (see library_loader.h for the search order).
#include "cuda/library_loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <sstream>

#include "core/check.h"
#include "core/logging.h"

namespace kilnrt::cuda {
namespace {

struct LibrarySpec {
  const char* name;
  std::vector<const char*> sonames;  // preferred first
  const char* install_hint;
};

const LibrarySpec& spec(Library lib) {
  // Function-local statics built on first use (not at load time); leaked so they outlive static destructors.
  static const LibrarySpec* specs = new LibrarySpec[kNumLibraries]{
      {"cuDNN",
       {"libcudnn.so.9"},
       "install cuDNN 9: `pip install nvidia-cudnn-cu13` (or -cu12), or the system package (libcudnn9-cuda-13)"},
      {"cuBLASLt",
       {"libcublasLt.so.13", "libcublasLt.so.12"},
       "install cuBLAS: `pip install nvidia-cublas` (CUDA 13; nvidia-cublas-cu12 for CUDA 12), or the CUDA toolkit's "
       "libcublas"},
      {"NVRTC",
       {"libnvrtc.so.13", "libnvrtc.so.12"},
       "install NVRTC: `pip install nvidia-cuda-nvrtc` (CUDA 13; nvidia-cuda-nvrtc-cu12 for CUDA 12), or the CUDA "
       "toolkit's libnvrtc"},
  };
  return specs[static_cast<int>(lib)];
}

std::once_flag g_once[kNumLibraries];
LibraryInfo* g_info[kNumLibraries];  // leaked

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool is_file(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}
std::string parent_dir(const std::string& p) {
  auto pos = p.find_last_of('/');
  if (pos == std::string::npos) return {};
  return pos == 0 ? "/" : p.substr(0, pos);
}
std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    closedir(d);
  }
  return out;
}
void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (s.empty()) return;
  for (const auto& x : v)
    if (x == s) return;
  v.push_back(s);
}

// <root>/nvidia/<pkg>/lib for every pip nvidia package under a site-packages root.
void add_nvidia_package_dirs(const std::string& site, std::vector<std::string>& out) {
  std::string nv = site + "/nvidia";
  if (!is_dir(nv)) return;
  for (const auto& pkg : list_dir(nv)) {
    std::string lib = nv + "/" + pkg + "/lib";
    if (is_dir(lib)) add_unique(out, lib);
  }
}

// <prefix>/lib/python3.*/site-packages
void add_prefix_site_packages(const std::string& prefix, std::vector<std::string>& sites) {
  if (prefix.empty()) return;
  for (const char* libdir : {"/lib", "/lib64"}) {
    std::string base = prefix + libdir;
    for (const auto& e : list_dir(base))
      if (e.rfind("python3", 0) == 0) {
        for (const char* sub : {"/site-packages", "/dist-packages"})
          if (is_dir(base + "/" + e + sub)) add_unique(sites, base + "/" + e + sub);
      }
  }
}

std::string loaded_path(void* handle) {
  link_map* lm = nullptr;
  if (handle && dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name) return lm->l_name;
  return {};
}

std::string format_version(long v) {
  std::ostringstream os;
  os << v / 10000 << "." << (v % 10000) / 100 << "." << v % 100;
  return os.str();
}

void read_version(Library lib, LibraryInfo& info) {
  switch (lib) {
    case Library::kCudnn: {
      using GetVersion = size_t (*)();
      if (auto fn = reinterpret_cast<GetVersion>(dlsym(info.handle, "cudnnGetVersion"))) {
        info.version = static_cast<long>(fn());
        info.version_string = format_version(info.version);
      }
      if (auto fn = reinterpret_cast<GetVersion>(dlsym(info.handle, "cudnnGetCudartVersion"))) {
        long rt = static_cast<long>(fn());
        std::ostringstream os;
        os << " (built for CUDA " << rt / 1000 << "." << (rt % 1000) / 10 << ")";
        info.version_string += os.str();
      }
      break;
    }
    case Library::kCublasLt: {
      using GetVersion = size_t (*)();
      if (auto fn = reinterpret_cast<GetVersion>(dlsym(info.handle, "cublasLtGetVersion"))) {
        info.version = static_cast<long>(fn());
        info.version_string = format_version(info.version);
      }
      break;
    }
    case Library::kNvrtc: {
      using Version = int (*)(int*, int*);
      if (auto fn = reinterpret_cast<Version>(dlsym(info.handle, "nvrtcVersion"))) {
        int major = 0, minor = 0;
        if (fn(&major, &minor) == 0) {
          info.version = major * 1000 + minor * 10;
          info.version_string = std::to_string(major) + "." + std::to_string(minor);
        }
      }
      break;
    }
  }
  if (info.version_string.empty()) info.version_string = "unknown";
}

bool try_open(const std::string& file, int flags, LibraryInfo& info, const char* soname, const char* source,
              std::vector<std::string>& errors) {
  dlerror();
  void* h = dlopen(file.c_str(), flags);
  if (!h) {
    if (!(flags & RTLD_NOLOAD)) {
      const char* e = dlerror();
      errors.push_back(file + ": " + (e ? e : "dlopen failed"));
    }
    return false;
  }
  info.found = true;
  info.handle = h;
  info.soname = soname;
  info.source = source;
  info.path = loaded_path(h);
  if (info.path.empty()) info.path = file;
  return true;
}

void load(Library lib, LibraryInfo& info) {
  const LibrarySpec& s = spec(lib);
  info.name = s.name;
  std::vector<std::string> errors;
  // 1. already loaded in the process
  for (const char* so : s.sonames)
    if (try_open(so, RTLD_NOW | RTLD_NOLOAD, info, so, "already loaded in the process", errors)) break;
  // 2. KILNRT_NVIDIA_LIB_DIRS
  if (!info.found) {
    if (const char* env = std::getenv("KILNRT_NVIDIA_LIB_DIRS")) {
      std::stringstream ss(env);
      std::string dir;
      std::vector<std::string> dirs;
      while (std::getline(ss, dir, ':')) add_unique(dirs, dir);
      for (const char* so : s.sonames) {
        for (const auto& d : dirs) {
          std::string f = d + "/" + so;
          if (is_file(f) && try_open(f, RTLD_NOW | RTLD_LOCAL, info, so, "KILNRT_NVIDIA_LIB_DIRS", errors)) break;
        }
        if (info.found) break;
      }
    }
  }
  // 3. pip's nvidia/* packages
  std::vector<std::string> pip_dirs;
  if (!info.found) {
    pip_dirs = pip_nvidia_library_dirs();
    for (const char* so : s.sonames) {
      for (const auto& d : pip_dirs) {
        std::string f = d + "/" + so;
        if (is_file(f) && try_open(f, RTLD_NOW | RTLD_LOCAL, info, so, "pip package", errors)) break;
      }
      if (info.found) break;
    }
  }
  // 4. the system
  if (!info.found)
    for (const char* so : s.sonames)
      if (try_open(so, RTLD_NOW | RTLD_LOCAL, info, so, "system", errors)) break;

  if (info.found) {
    read_version(lib, info);
    KILNRT_LOG(kDebug,
               s.name << " " << info.version_string << " loaded from " << info.path << " (" << info.source << ")");
    return;
  }
  std::ostringstream os;
  os << s.name << " not found (tried";
  for (const char* so : s.sonames) os << " " << so;
  os << ": not loaded in the process";
  if (!pip_dirs.empty()) os << ", not in " << pip_dirs.size() << " pip nvidia package dir(s)";
  os << ", not found by the system loader";
  if (!errors.empty()) os << " — " << errors.back();
  os << "): " << s.install_hint << ", or point KILNRT_NVIDIA_LIB_DIRS at the directory holding it";
  info.why_missing = os.str();
}

}  // namespace

LibraryInfo load_library_uncached(Library lib) {
  LibraryInfo info;
  try {
    load(lib, info);
  } catch (const std::exception& e) {
    info.found = false;
    info.why_missing = std::string(library_name(lib)) + ": loading failed: " + e.what();
  }
  return info;
}

const char* library_name(Library lib) { return spec(lib).name; }

std::vector<std::string> pip_nvidia_library_dirs() {
  std::vector<std::string> sites;
  // Next to libkilnrt: a wheel puts it in site-packages/kilnrt[/lib].
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&pip_nvidia_library_dirs), &self) && self.dli_fname) {
    std::string d = parent_dir(self.dli_fname);
    for (int i = 0; i < 3 && !d.empty() && d != "/"; ++i) {
      d = parent_dir(d);
      if (is_dir(d + "/nvidia")) add_unique(sites, d);
    }
  }
  // Only when a Python interpreter runs in this process: its prefix, the venv / conda env, the user site.
  if (dlsym(RTLD_DEFAULT, "Py_IsInitialized") != nullptr) {
    if (const char* v = std::getenv("VIRTUAL_ENV")) add_prefix_site_packages(v, sites);
    if (const char* c = std::getenv("CONDA_PREFIX")) add_prefix_site_packages(c, sites);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
      exe[n] = '\0';
      add_prefix_site_packages(parent_dir(parent_dir(exe)), sites);
    }
    if (const char* home = std::getenv("HOME")) add_prefix_site_packages(std::string(home) + "/.local", sites);
  }
  std::vector<std::string> out;
  for (const auto& s : sites) add_nvidia_package_dirs(s, out);
  return out;
}

const LibraryInfo& library(Library lib) {
  int i = static_cast<int>(lib);
  std::call_once(g_once[i], [&] { g_info[i] = new LibraryInfo(load_library_uncached(lib)); });
  return *g_info[i];
}

void* library_symbol(Library lib, const char* symbol) {
  const LibraryInfo& info = library(lib);
  if (!info.found) return nullptr;
  return dlsym(info.handle, symbol);
}

void* require_library_symbol(Library lib, const char* symbol) {
  const LibraryInfo& info = library(lib);
  KILNRT_CHECK(info.found, kUnsupported, info.name, info.why_missing);
  void* p = dlsym(info.handle, symbol);
  KILNRT_CHECK(p != nullptr, kUnsupported, info.name,
               info.name << " at " << info.path << " (version " << info.version_string << ") lacks " << symbol
                         << ": install a newer " << info.name);
  return p;
}

}  // namespace kilnrt::cuda
