// NVRTC function table, compile-target choice, compilation and the on-disk cache of compiled code.
#include "cuda/nvrtc_compiler.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/check.h"
#include "core/checksum.h"
#include "core/logging.h"
#include "cuda/call_injection.h"
#include "cuda/library_loader.h"

namespace kilnrt::cuda {
namespace {

std::once_flag g_nvrtc_once;
NvrtcApi* g_nvrtc = nullptr;           // leaked
std::string* g_nvrtc_error = nullptr;  // leaked; set when loading failed

std::atomic<long> g_compilations{0}, g_disk_hits{0}, g_disk_writes{0}, g_rejected{0};

constexpr char kCacheMagic[8] = {'K', 'I', 'L', 'N', 'K', 'E', 'R', 'N'};
constexpr uint32_t kCacheFormat = 1;
constexpr size_t kMaxCacheFile = size_t(512) << 20;

void load_nvrtc() {
  const LibraryInfo& info = library(Library::kNvrtc);
  if (!info.found) {
    g_nvrtc_error = new std::string(info.why_missing);
    return;
  }
  auto* api = new NvrtcApi;
  std::string missing;
#define KILNRT_NVRTC_LOAD(member, symbol, required)                                                \
  api->member = reinterpret_cast<decltype(api->member)>(library_symbol(Library::kNvrtc, #symbol)); \
  if (required && !api->member) missing += std::string(missing.empty() ? "" : ", ") + #symbol;     \
  api->member = KILNRT_INJECTABLE_CALL(#symbol, api->member);
  KILNRT_NVRTC_FUNCTIONS(KILNRT_NVRTC_LOAD)
#undef KILNRT_NVRTC_LOAD
  if (!missing.empty()) {
    g_nvrtc_error = new std::string("NVRTC at " + info.path + " (version " + info.version_string + ") lacks " +
                                    missing + ": install NVRTC 12 or newer (`pip install nvidia-cuda-nvrtc`)");
    delete api;
    return;
  }
  int major = 0, minor = 0;
  if (api->Version(&major, &minor) == NVRTC_SUCCESS) api->version = major * 1000 + minor * 10;
  if (api->GetNumSupportedArchs && api->GetSupportedArchs) {
    int n = 0;
    if (api->GetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0 && n < 1000) {
      std::vector<int> archs(static_cast<size_t>(n));
      if (api->GetSupportedArchs(archs.data()) == NVRTC_SUCCESS) api->supported_archs = archs;
    }
  }
  g_nvrtc = api;
}

std::string nvrtc_status(const NvrtcApi& api, nvrtcResult r) {
  const char* s = api.GetErrorString ? api.GetErrorString(r) : nullptr;
  return s ? std::string(s) : "nvrtcResult " + std::to_string(static_cast<int>(r));
}

std::string joined_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}

#define KILNRT_NVRTC_CHECK(api, call, where)                                                                         \
  do {                                                                                                               \
    nvrtcResult kilnrt_nv_result_ = (call);                                                                          \
    if (kilnrt_nv_result_ != NVRTC_SUCCESS)                                                                          \
      throw ::kilnrt::Error(::kilnrt::ErrorCode::kCuda, "NVRTC: " + nvrtc_status((api), kilnrt_nv_result_), (where), \
                            #call, __FILE__, __LINE__);                                                              \
  } while (0)

// Owns an nvrtcProgram: destroyed on every path.
struct Program {
  const NvrtcApi& api;
  nvrtcProgram prog = nullptr;
  explicit Program(const NvrtcApi& a) : api(a) {}
  ~Program() {
    if (prog) api.DestroyProgram(&prog);
  }
};

std::string program_log(const NvrtcApi& api, nvrtcProgram prog) {
  size_t n = 0;
  if (api.GetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1) return {};
  std::string log(n, '\0');
  if (api.GetProgramLog(prog, &log[0]) != NVRTC_SUCCESS) return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::shared_ptr<CompiledCode> run_nvrtc(const std::string& source, const std::vector<std::string>& names,
                                        const CompileTarget& target, const KernelCompileOptions& options) {
  const NvrtcApi& api = nvrtc_api();
  const std::string where = "kernel " + joined_names(names);
  Program p(api);
  KILNRT_NVRTC_CHECK(api, api.CreateProgram(&p.prog, source.c_str(), options.program_name.c_str(), 0, nullptr, nullptr),
                     where);
  for (const auto& n : names) KILNRT_NVRTC_CHECK(api, api.AddNameExpression(p.prog, n.c_str()), where);
  std::vector<std::string> opts = options.nvrtc_options;
  opts.push_back("-arch=" + target.name());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  g_compilations.fetch_add(1, std::memory_order_relaxed);
  nvrtcResult r = api.CompileProgram(p.prog, static_cast<int>(argv.size()), argv.data());
  if (r != NVRTC_SUCCESS) {
    std::ostringstream os;
    os << "NVRTC failed to compile " << where << " for " << target.name() << " (" << nvrtc_status(api, r) << ")";
    std::string log = program_log(api, p.prog);
    os << (log.empty() ? std::string(": no log") : ":\n" + log);
    throw Error(ErrorCode::kCuda, os.str(), where, "nvrtcCompileProgram", __FILE__, __LINE__);
  }
  std::string log = program_log(api, p.prog);
  if (!log.empty()) KILNRT_LOG(kDebug, "NVRTC log for " << where << ":\n" << log);

  auto code = std::make_shared<CompiledCode>();
  code->arch = target.arch;
  code->nvrtc_version = api.version;
  code->names = names;
  for (const auto& n : names) {
    const char* lowered = nullptr;
    KILNRT_NVRTC_CHECK(api, api.GetLoweredName(p.prog, n.c_str(), &lowered), where);
    KILNRT_CHECK(lowered != nullptr, kCuda, where, "NVRTC gave no lowered name for '" << n << "'");
    code->lowered_names.emplace_back(lowered);
  }
  size_t size = 0;
  if (target.cubin) {
    code->kind = CompiledCode::Kind::kCubin;
    KILNRT_NVRTC_CHECK(api, api.GetCUBINSize(p.prog, &size), where);
    code->image.assign(size, '\0');
    if (size) KILNRT_NVRTC_CHECK(api, api.GetCUBIN(p.prog, &code->image[0]), where);
  } else {
    code->kind = CompiledCode::Kind::kPtx;
    KILNRT_NVRTC_CHECK(api, api.GetPTXSize(p.prog, &size), where);
    code->image.assign(size, '\0');
    if (size) KILNRT_NVRTC_CHECK(api, api.GetPTX(p.prog, &code->image[0]), where);
    while (!code->image.empty() && code->image.back() == '\0') code->image.pop_back();  // c_str() re-adds one
  }
  KILNRT_CHECK(!code->image.empty(), kCuda, where, "NVRTC produced no code for " << target.name());
  return code;
}

// ---- little-endian codec -----------------------------------------------------------------------------------
void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_bytes(std::string& s, const std::string& b) {
  put_u64(s, b.size());
  s += b;
}

struct Reader {
  const std::string& s;
  size_t pos = 0;
  bool ok = true;
  uint64_t u(int bytes) {
    if (!ok || s.size() - pos < static_cast<size_t>(bytes)) {
      ok = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<unsigned char>(s[pos + i])) << (8 * i);
    pos += static_cast<size_t>(bytes);
    return v;
  }
  std::string bytes() {
    uint64_t n = u(8);
    if (!ok || n > s.size() - pos) {
      ok = false;
      return {};
    }
    std::string b = s.substr(pos, static_cast<size_t>(n));
    pos += static_cast<size_t>(n);
    return b;
  }
};

bool read_file(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  f.seekg(0, std::ios::end);
  std::streamoff n = f.tellg();
  if (n <= 0 || static_cast<uint64_t>(n) > kMaxCacheFile) return false;
  f.seekg(0);
  out->assign(static_cast<size_t>(n), '\0');
  f.read(&(*out)[0], n);
  return static_cast<bool>(f);
}

bool make_dirs(const std::string& dir) {
  if (dir.empty()) return false;
  std::string cur;
  std::stringstream ss(dir);
  std::string part;
  if (dir[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Writes via a temporary file in the same directory and rename(): readers see the old file or the whole new one.
void write_cache_file(const std::string& path, const std::string& bytes) {
  std::string dir = path.substr(0, path.find_last_of('/'));
  if (!make_dirs(dir)) {
    KILNRT_LOG(kWarning, "kernel cache: cannot create " << dir << " (" << std::strerror(errno)
                                                        << "); compiled code is not cached");
    return;
  }
  std::ostringstream tmp;
  tmp << path << ".tmp." << getpid() << "." << std::hash<std::thread::id>()(std::this_thread::get_id());
  const std::string t = tmp.str();
  int fd = open(t.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    KILNRT_LOG(kWarning, "kernel cache: cannot write " << t << " (" << std::strerror(errno) << ")");
    return;
  }
  size_t done = 0;
  bool ok = true;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ok = false;
      break;
    }
    done += static_cast<size_t>(w);
  }
  if (::close(fd) != 0) ok = false;
  if (!ok || std::rename(t.c_str(), path.c_str()) != 0) {
    KILNRT_LOG(kWarning, "kernel cache: writing " << path << " failed (" << std::strerror(errno) << ")");
    ::unlink(t.c_str());
    return;
  }
  g_disk_writes.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

const NvrtcApi& nvrtc_api() {
  std::call_once(g_nvrtc_once, [] {
    try {
      load_nvrtc();
    } catch (const std::exception& e) {
      if (!g_nvrtc_error) g_nvrtc_error = new std::string(std::string("loading NVRTC failed: ") + e.what());
    }
  });
  if (!g_nvrtc)
    throw Error(ErrorCode::kUnsupported,
                "run-time kernel compilation needs NVRTC: " + (g_nvrtc_error ? *g_nvrtc_error : std::string("?")),
                "NVRTC", "nvrtc_api()", __FILE__, __LINE__);
  return *g_nvrtc;
}

std::string CompileTarget::name() const { return (cubin ? "sm_" : "compute_") + std::to_string(arch); }

CompileTarget choose_target(int device_arch, const std::vector<int>& supported, int nvrtc_version) {
  KILNRT_CHECK(device_arch > 0, kInvalidArgument, "NVRTC", "invalid compute capability " << device_arch);
  if (supported.empty()) return {device_arch, true};
  int best = 0;
  for (int a : supported) {
    if (a == device_arch) return {device_arch, true};
    if (a < device_arch && a > best) best = a;
  }
  if (best == 0) {
    KILNRT_THROW(kUnsupported, "NVRTC",
                 "NVRTC " << nvrtc_version / 1000 << "." << (nvrtc_version % 1000) / 10 << " cannot compile for sm_"
                          << device_arch << " (its oldest target is sm_" << supported.front()
                          << "): install an NVRTC that supports this GPU (e.g. `pip install nvidia-cuda-nvrtc-cu12`) "
                             "and point KILNRT_NVIDIA_LIB_DIRS at it");
  }
  return {best, false};  // the GPU is newer than NVRTC: PTX, JIT-compiled by the driver
}

std::string compile_key_material(const std::string& source, const std::vector<std::string>& names,
                                 const std::vector<std::string>& options, const CompileTarget& target,
                                 int nvrtc_version) {
  std::string k = "kilnrt-nvrtc-cache-v1\n";
  k += "nvrtc " + std::to_string(nvrtc_version) + "\ntarget " + target.name() + "\n";
  for (const auto& o : options) k += "option " + std::to_string(o.size()) + ":" + o + "\n";
  for (const auto& n : names) k += "name " + std::to_string(n.size()) + ":" + n + "\n";
  k += "source " + std::to_string(source.size()) + ":" + source;
  return k;
}

std::string kernel_cache_dir() {
  const char* env = std::getenv("KILNRT_CACHE_DIR");
  if (env && *env) return std::string(env) + "/kernels";
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg == '/') return std::string(xdg) + "/kilnrt/kernels";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/kilnrt/kernels";
  return {};
}

std::string kernel_cache_path(const std::string& key_material) {
  std::string dir = kernel_cache_dir();
  if (dir.empty()) return {};
  return dir + "/" + hash64_hex(key_material.data(), key_material.size()) + ".kbin";
}

std::string encode_kernel_cache_file(const CompiledCode& code, const std::string& key_material) {
  std::string s(kCacheMagic, sizeof(kCacheMagic));
  put_u32(s, kCacheFormat);
  put_u32(s, static_cast<uint32_t>(code.kind));
  put_u32(s, static_cast<uint32_t>(code.arch));
  put_u32(s, static_cast<uint32_t>(code.nvrtc_version));
  put_bytes(s, key_material);
  put_u32(s, static_cast<uint32_t>(code.names.size()));
  for (size_t i = 0; i < code.names.size(); ++i) {
    put_bytes(s, code.names[i]);
    put_bytes(s, i < code.lowered_names.size() ? code.lowered_names[i] : std::string());
  }
  put_bytes(s, code.image);
  put_u32(s, crc32c(s.data(), s.size()));
  return s;
}

bool decode_kernel_cache_file(const std::string& bytes, const std::string& key_material, CompiledCode* out) {
  if (bytes.size() < sizeof(kCacheMagic) + 8 || std::memcmp(bytes.data(), kCacheMagic, sizeof(kCacheMagic)) != 0)
    return false;
  const size_t body = bytes.size() - 4;
  uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) stored |= uint32_t(static_cast<unsigned char>(bytes[body + i])) << (8 * i);
  if (crc32c(bytes.data(), body) != stored) return false;
  Reader r{bytes, sizeof(kCacheMagic)};
  if (r.u(4) != kCacheFormat) return false;
  CompiledCode c;
  uint64_t kind = r.u(4);
  if (kind != static_cast<uint32_t>(CompiledCode::Kind::kCubin) &&
      kind != static_cast<uint32_t>(CompiledCode::Kind::kPtx))
    return false;
  c.kind = static_cast<CompiledCode::Kind>(kind);
  c.arch = static_cast<int>(r.u(4));
  c.nvrtc_version = static_cast<int>(r.u(4));
  if (r.bytes() != key_material || !r.ok) return false;
  uint64_t n = r.u(4);
  if (!r.ok || n > 4096) return false;
  for (uint64_t i = 0; i < n && r.ok; ++i) {
    c.names.push_back(r.bytes());
    c.lowered_names.push_back(r.bytes());
  }
  c.image = r.bytes();
  if (!r.ok || r.pos != body || c.image.empty()) return false;
  for (const auto& l : c.lowered_names)
    if (l.empty()) return false;
  c.from_disk_cache = true;
  *out = std::move(c);
  return true;
}

std::shared_ptr<const CompiledCode> compile_cuda(const std::string& source, const std::vector<std::string>& names,
                                                 const CompileTarget& target, const KernelCompileOptions& options) {
  KILNRT_CHECK(!names.empty(), kInvalidArgument, "NVRTC", "compile_cuda needs at least one kernel name");
  const NvrtcApi& api = nvrtc_api();
  std::string path;
  std::string key;
  if (options.disk_cache) {
    key = compile_key_material(source, names, options.nvrtc_options, target, api.version);
    path = kernel_cache_path(key);
  }
  if (!path.empty()) {
    std::string bytes;
    if (read_file(path, &bytes)) {
      auto code = std::make_shared<CompiledCode>();
      if (decode_kernel_cache_file(bytes, key, code.get())) {
        g_disk_hits.fetch_add(1, std::memory_order_relaxed);
        return code;
      }
      g_rejected.fetch_add(1, std::memory_order_relaxed);
      KILNRT_LOG(kWarning, "kernel cache: ignoring damaged or foreign file " << path << "; rebuilding it");
    }
  }
  std::shared_ptr<CompiledCode> code = run_nvrtc(source, names, target, options);
  if (!path.empty()) write_cache_file(path, encode_kernel_cache_file(*code, key));
  return code;
}

NvrtcStats nvrtc_stats() {
  NvrtcStats s;
  s.compilations = g_compilations.load(std::memory_order_relaxed);
  s.disk_hits = g_disk_hits.load(std::memory_order_relaxed);
  s.disk_writes = g_disk_writes.load(std::memory_order_relaxed);
  s.rejected_files = g_rejected.load(std::memory_order_relaxed);
  return s;
}

// ---- CompiledCode ------------------------------------------------------------------------------------------
const std::string& CompiledCode::lowered_name(const std::string& name) const {
  for (size_t i = 0; i < names.size() && i < lowered_names.size(); ++i)
    if (names[i] == name) return lowered_names[i];
  KILNRT_THROW(kInvalidArgument, "kernel '" + name + "'",
               "kernel '" << name << "' is not in this compiled code (it has " << joined_names(names) << ")");
}

std::string CompiledCode::target_name() const {
  return (kind == Kind::kCubin ? "sm_" : "compute_") + std::to_string(arch);
}

}  // namespace kilnrt::cuda
