// Diagnostics: what kilnrt found on this machine (driver, CUDA runtime, cuDNN, cuBLASLt, NVRTC, GPUs) and, for each
// missing or mismatched piece, what to do. Never throws; safe without a GPU or driver.
#pragma once
#include <string>

namespace kilnrt {
std::string doctor_report();
// True when a CUDA driver and at least one GPU are usable; `why_not` explains otherwise.
bool cuda_available(std::string* why_not = nullptr);
}  // namespace kilnrt
