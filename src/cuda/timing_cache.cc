// The process-wide tactic timing cache and the device key of its entries (timing_cache.h).
#include "cuda/timing_cache.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>

#include "core/check.h"
#include "core/logging.h"
#include "cuda/context_guard.h"
#include "cuda/driver_api.h"
#include "cuda/library_loader.h"

namespace kilnrt::cuda {
namespace {

struct Cache {
  std::mutex mu;
  std::map<std::string, std::string> entries;
  bool file_loaded = false;
};
Cache& cache() {
  static Cache* c = new Cache;  // leaked on purpose: used from destructors at exit
  return *c;
}

const char* cache_file() {
  const char* f = std::getenv("KILNRT_TIMING_CACHE");
  return f && *f ? f : nullptr;
}

void load_file_locked(Cache& c) {
  if (c.file_loaded) return;
  c.file_loaded = true;
  const char* path = cache_file();
  if (!path) return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0 || tab + 1 >= line.size()) continue;  // values are parsed at find
    c.entries[line.substr(0, tab)] = line.substr(tab + 1);
  }
}

std::string query_device_key(int device) {
  ContextGuard guard(device);
  const DriverApi& api = guard.api();
  CUdevice dev = 0;
  KILNRT_CU_CHECK(api, api.DeviceGet(&dev, device), "conv tuning");
  int major = 0, minor = 0;
  const char* where = "conv tuning";
  KILNRT_CU_CHECK(api, api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), where);
  KILNRT_CU_CHECK(api, api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), where);
  char name[256] = {};
  KILNRT_CU_CHECK(api, api.DeviceGetName(name, sizeof(name) - 1, dev), "conv tuning");
  const LibraryInfo& dnn = library(Library::kCudnn);
  const LibraryInfo& lt = library(Library::kCublasLt);
  return std::string(name) + "|sm_" + std::to_string(major * 10 + minor) + "|cudnn " +
         (dnn.found ? dnn.version_string : "-") + "|cublaslt " + (lt.found ? lt.version_string : "-");
}

}  // namespace

std::string tuning_device_key(int device) {
  static std::mutex mu;
  static std::map<int, std::string>* keys = new std::map<int, std::string>;  // leaked: used at exit
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = keys->find(device);
    if (it != keys->end()) return it->second;
  }
  const std::string key = query_device_key(device);
  std::lock_guard<std::mutex> lock(mu);
  return (*keys)[device] = key;
}

bool timing_cache_find_raw(const std::string& key, std::string* value) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  load_file_locked(c);
  auto it = c.entries.find(key);
  if (it == c.entries.end()) return false;
  *value = it->second;
  return true;
}

void timing_cache_store_raw(const std::string& key, const std::string& v) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  load_file_locked(c);
  c.entries[key] = v;
  if (const char* path = cache_file()) {
    std::ofstream f(path, std::ios::app);
    if (f) f << key << '\t' << v << '\n';
    if (!f) KILNRT_LOG(kWarning, "cannot append to the timing cache " << path);
  }
}

void timing_cache_clear() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.entries.clear();
  c.file_loaded = false;
}

}  // namespace kilnrt::cuda
