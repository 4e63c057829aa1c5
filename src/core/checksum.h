// Fast checksums for engine files and model identity.
//
// crc32c: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) with the usual ~ pre/post conditioning, so
// crc32c("123456789") == 0xE3069283 and calls compose: crc32c(b, nb, crc32c(a, na)) == crc32c(a + b).
// On x86-64 CPUs with SSE4.2 it uses the crc32 instruction (three interleaved streams, > 10 GB/s); elsewhere a
// table-driven slicing-by-8 loop. The choice is made once at run time; the library is not compiled with -msse4.2.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kilnrt {

uint32_t crc32c(const void* data, size_t n, uint32_t seed = 0);

// The two implementations behind crc32c(), exposed for tests and benchmarks. crc32c_hardware() must only be called
// when crc32c_hardware_available() is true (it throws kilnrt::Error otherwise).
uint32_t crc32c_software(const void* data, size_t n, uint32_t seed = 0);
uint32_t crc32c_hardware(const void* data, size_t n, uint32_t seed = 0);
bool crc32c_hardware_available();

// A 64-bit identity hash (not cryptographic) of a byte string, e.g. the ONNX model an engine was built from: built
// from the CRC-32C of the first half and of the whole, mixed with the length. hash64_hex() gives 16 lower-case hex
// digits.
uint64_t hash64(const void* data, size_t n);
std::string hash64_hex(const void* data, size_t n);

}  // namespace kilnrt
