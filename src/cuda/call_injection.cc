#include "cuda/call_injection.h"

namespace kilnrt::cuda::injection {
namespace {

bool contains(const char* s, const char* part) { return std::strstr(s, part) != nullptr; }

}  // namespace

bool injectable(const char* name) {
  static const char* const never[] = {
      "Free",   "Destroy",          "Unload",         "PopCurrent",   "CtxRelease",     "ErrorName", "ErrorString",
      "cuInit", "DriverGetVersion", "GetProcAddress", "nvrtcVersion", "SupportedArchs", "ProgramLog"};
  for (const char* n : never)
    if (contains(name, n)) return false;
  return true;
}

bool allocating(const char* name) {
  return contains(name, "Alloc") || contains(name, "Create") || contains(name, "Retain") ||
         contains(name, "ModuleLoad") || contains(name, "Instantiate");
}

}  // namespace kilnrt::cuda::injection
