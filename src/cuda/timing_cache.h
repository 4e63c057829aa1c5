// The process-wide tactic timing cache: timing results of the build-time tactic timing (ops/cuda/tactic_timing.h),
// keyed by "<device key>|<problem>", so that building the same model twice does not time again.
//
// Keys: the device part is tuning_device_key() ("<GPU name>|sm_XY|cudnn <version>|cublaslt <version>"); the problem
// part is written by the op that times (a conv's geometry, dtype, layout and epilogue; a GEMM's op and shapes; ...).
// Values are strings in the op's own encoding ("cudnn:1", 128 hex digits of a cuBLASLt algorithm, "flip" / "keep");
// find returns them unchecked, the op parses them.
//
// KILNRT_TIMING_CACHE=FILE: the cache is also read from FILE at first use (one "key<TAB>value" per line; lines
// without a tab, with an empty key or an empty value are skipped; a later line wins) and every new entry is appended
// to it. Without it the cache lives in memory only.
#pragma once
#include <string>

namespace kilnrt::cuda {

// The value stored under `key` (in memory, or read from the KILNRT_TIMING_CACHE file); false when absent.
bool timing_cache_find_raw(const std::string& key, std::string* value);
// Stores `value` under `key` in memory and appends it to the KILNRT_TIMING_CACHE file (a warning when it cannot).
void timing_cache_store_raw(const std::string& key, const std::string& value);
void timing_cache_clear();  // forgets the in-memory entries (tests); the file stays and is read again at next use
// GPU name + SM + cuDNN + cuBLASLt versions of `device` (the device part of every cache key), remembered per device.
std::string tuning_device_key(int device);

}  // namespace kilnrt::cuda
