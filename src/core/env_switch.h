// On/off switches read from the process environment (the KILNRT_* knobs that turn a default-on path off).
#pragma once
#include <cstdlib>
#include <cstring>

namespace kilnrt {

// True when the variable `name` is set to exactly "0": the way every default-on kilnrt path is turned off.
inline bool env_switched_off(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "0") == 0;
}

}  // namespace kilnrt
