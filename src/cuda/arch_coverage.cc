// The architecture coverage rule of arch_coverage.h and the device query behind it.
#include "cuda/arch_coverage.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <utility>
#include <vector>

#include "cuda/driver_api.h"

// CMakeLists.txt defines it for the library (entries joined with ','); "" elsewhere (unknown: counts as covered).
#ifndef KILNRT_CUDA_ARCHS_BUILT
#define KILNRT_CUDA_ARCHS_BUILT ""
#endif

namespace kilnrt::cuda {
namespace {

struct ArchEntry {
  std::string text;    // as written: "86", "90a", "86-real"
  int number = 0;      // 86: compute capability 8.6
  std::string suffix;  // "" (portable), "a" (arch-specific), "f" (family)
  bool sass = false;
  bool ptx = false;  // PTX that JITs forward (never for "a" / "f" entries)
};

struct ArchList {
  std::vector<ArchEntry> entries;
  bool unknown = false;  // empty, or a special / unparseable value: cannot be judged
};

std::vector<std::string> split_archs(const std::string& archs) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : archs) {
    if (c == ';' || c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

ArchList parse_archs(const std::string& archs) {
  ArchList list;
  const std::vector<std::string> tokens = split_archs(archs);
  if (tokens.empty()) list.unknown = true;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const bool last = i + 1 == tokens.size();
    ArchEntry e;
    e.text = tokens[i];
    std::string core = tokens[i];
    bool real_only = false, virtual_only = false;
    if (ends_with(core, "-real")) {
      real_only = true;
      core.resize(core.size() - 5);
    } else if (ends_with(core, "-virtual")) {
      virtual_only = true;
      core.resize(core.size() - 8);
    }
    size_t digits = 0;
    while (digits < core.size() && std::isdigit(static_cast<unsigned char>(core[digits]))) ++digits;
    e.suffix = core.substr(digits);
    if (digits == 0 || digits > 4 || (!e.suffix.empty() && e.suffix != "a" && e.suffix != "f")) {
      list.unknown = true;  // "native", "all", "all-major" or something else CMake may accept
      continue;
    }
    e.number = std::stoi(core.substr(0, digits));
    // CMakeLists.txt builds every entry but the last as "<arch>-real" and the last as written (SASS + PTX).
    e.sass = !virtual_only;
    e.ptx = e.suffix.empty() && !real_only && (virtual_only || last);
    list.entries.push_back(e);
  }
  return list;
}

bool sass_runs_on(const ArchEntry& e, int major, int minor) {
  if (!e.sass) return false;
  if (e.suffix == "a") return e.number == major * 10 + minor;  // arch-specific: that GPU alone
  return e.number / 10 == major && e.number % 10 <= minor;     // same major, same or older minor
}

bool ptx_runs_on(const ArchEntry& e, int major, int minor) { return e.ptx && e.number <= major * 10 + minor; }

std::string dotted(int number) { return std::to_string(number / 10) + "." + std::to_string(number % 10); }

}  // namespace

std::string cuda_archs_built() {
  std::string archs = KILNRT_CUDA_ARCHS_BUILT;
  std::replace(archs.begin(), archs.end(), ',', ';');
  return archs;
}

bool arch_list_covers(int major, int minor, const std::string& archs) {
  const ArchList list = parse_archs(archs);
  if (list.unknown) return true;
  for (const ArchEntry& e : list.entries)
    if (sass_runs_on(e, major, minor) || ptx_runs_on(e, major, minor)) return true;
  return false;
}

std::string describe_arch_list(const std::string& archs) {
  const ArchList list = parse_archs(archs);
  std::string sass, ptx;
  for (const ArchEntry& e : list.entries) {
    if (e.sass) sass += (sass.empty() ? "sm_" : ", sm_") + std::to_string(e.number) + e.suffix;
    if (e.ptx) ptx += (ptx.empty() ? "PTX " : ", PTX ") + dotted(e.number);
  }
  std::string out = sass;
  if (!ptx.empty()) out += (out.empty() ? "" : " + ") + ptx;
  if (out.empty()) out = archs.empty() ? "an unknown architecture list" : "\"" + archs + "\"";
  return out;
}

std::string arch_list_with(int major, int minor, const std::string& archs) {
  const ArchList list = parse_archs(archs);
  const int device = major * 10 + minor;
  std::vector<std::pair<int, std::string>> entries;  // (number, text): sorted by number, then text
  bool present = false;
  for (const ArchEntry& e : list.entries) {
    entries.emplace_back(e.number, e.text);
    if (e.text == std::to_string(device)) present = true;
  }
  if (!present) entries.emplace_back(device, std::to_string(device));
  std::sort(entries.begin(), entries.end());
  std::string out;
  for (const auto& [number, text] : entries) out += (out.empty() ? "" : ";") + text;
  return out;
}

std::string arch_coverage_message(int device, const std::string& gpu_name, int major, int minor,
                                  const std::string& archs) {
  if (arch_list_covers(major, minor, archs)) return "";
  std::ostringstream os;
  os << "GPU " << device << " (" << gpu_name << ", compute capability " << major << "." << minor
     << ") is not covered by this build's CUDA kernels (built for " << describe_arch_list(archs)
     << "): rebuild with -DKILNRT_CUDA_ARCHS=\"" << arch_list_with(major, minor, archs)
     << "\" (scripts/setup.sh -DKILNRT_CUDA_ARCHS=...)";
  return os.str();
}

std::string arch_coverage_problem(int device) {
  const DriverApi& api = driver_api();
  const std::string where = "device " + std::to_string(device);
  CUdevice dev = 0;
  KILNRT_CU_CHECK(api, api.DeviceGet(&dev, device), where);
  int major = 0, minor = 0;
  KILNRT_CU_CHECK(api, api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), where);
  KILNRT_CU_CHECK(api, api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), where);
  char name[256] = {};
  KILNRT_CU_CHECK(api, api.DeviceGetName(name, sizeof(name) - 1, dev), where);
  return arch_coverage_message(device, name, major, minor, cuda_archs_built());
}

}  // namespace kilnrt::cuda
