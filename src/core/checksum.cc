// CRC-32C: a slicing-by-8 table implementation and an SSE4.2 one (three interleaved streams combined with a
// precomputed "advance by L zero bytes" operator). Both work on the raw CRC register; crc32c() adds the ~ pre/post
// conditioning.
#include "core/checksum.h"

#include <cstring>

#include "core/check.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#define KILNRT_CRC32C_X86 1
#endif

namespace kilnrt {
namespace {

constexpr uint32_t kPolyReflected = 0x82F63B78u;

inline uint32_t load_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

struct SlicingTables {
  uint32_t t[8][256];
  SlicingTables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ kPolyReflected : c >> 1;
      t[0][i] = c;
    }
    for (int k = 1; k < 8; ++k)
      for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xffu];
  }
};

const SlicingTables& slicing_tables() {
  static const SlicingTables tables;
  return tables;
}

uint32_t crc_raw_software(uint32_t crc, const uint8_t* p, size_t n) {
  const auto& t = slicing_tables().t;
  while (n >= 8) {
    const uint32_t lo = crc ^ load_le32(p);
    const uint32_t hi = load_le32(p + 4);
    crc = t[7][lo & 0xffu] ^ t[6][(lo >> 8) & 0xffu] ^ t[5][(lo >> 16) & 0xffu] ^ t[4][lo >> 24] ^ t[3][hi & 0xffu] ^
          t[2][(hi >> 8) & 0xffu] ^ t[1][(hi >> 16) & 0xffu] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xffu];
  return crc;
}

#if KILNRT_CRC32C_X86

bool cpu_has_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}

__attribute__((target("sse4.2"))) uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Raw CRC register after feeding `zero_words` 8-byte zero words, starting from `crc`.
__attribute__((target("sse4.2"))) uint32_t advance_zeros_hw(uint32_t crc, size_t zero_words) {
  uint64_t c = crc;
  for (size_t i = 0; i < zero_words; ++i) c = _mm_crc32_u64(c, 0);
  return static_cast<uint32_t>(c);
}

// The linear map "advance the raw CRC register over L zero bytes", as four byte-indexed tables.
struct ShiftOperator {
  uint32_t t[4][256];
  explicit ShiftOperator(size_t bytes) {
    uint32_t basis[32];
    for (int j = 0; j < 32; ++j) basis[j] = advance_zeros_hw(1u << j, bytes / 8);
    for (int k = 0; k < 4; ++k)
      for (uint32_t v = 0; v < 256; ++v) {
        uint32_t acc = 0;
        for (int bit = 0; bit < 8; ++bit)
          if (v & (1u << bit)) acc ^= basis[8 * k + bit];
        t[k][v] = acc;
      }
  }
  uint32_t apply(uint32_t crc) const {
    return t[0][crc & 0xffu] ^ t[1][(crc >> 8) & 0xffu] ^ t[2][(crc >> 16) & 0xffu] ^ t[3][crc >> 24];
  }
};

constexpr size_t kLongStream = 8192;  // bytes per stream, large blocks
constexpr size_t kShortStream = 256;  // bytes per stream, medium blocks

const ShiftOperator& long_shift() {
  static const ShiftOperator op(kLongStream);
  return op;
}
const ShiftOperator& short_shift() {
  static const ShiftOperator op(kShortStream);
  return op;
}

// Three independent crc32 chains over consecutive L-byte stretches hide the instruction's 3-cycle latency; the
// chains are then merged: crc(A|B|C) = shift(shift(a, L) ^ b, L) ^ c.
template <size_t L>
__attribute__((target("sse4.2"))) inline uint32_t crc_three_streams(uint32_t crc, const uint8_t* p,
                                                                    const ShiftOperator& shift) {
  uint64_t a = crc, b = 0, c = 0;
  for (size_t i = 0; i < L; i += 8) {
    a = _mm_crc32_u64(a, load_u64(p + i));
    b = _mm_crc32_u64(b, load_u64(p + L + i));
    c = _mm_crc32_u64(c, load_u64(p + 2 * L + i));
  }
  return shift.apply(shift.apply(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b)) ^ static_cast<uint32_t>(c);
}

__attribute__((target("sse4.2"))) uint32_t crc_raw_hardware(uint32_t crc, const uint8_t* p, size_t n) {
  // Align to 8 bytes so the wide loads never straddle cache lines needlessly.
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7u) != 0) {
    crc = _mm_crc32_u8(crc, *p++);
    --n;
  }
  if (n >= 3 * kLongStream) {
    const ShiftOperator& shift = long_shift();
    while (n >= 3 * kLongStream) {
      crc = crc_three_streams<kLongStream>(crc, p, shift);
      p += 3 * kLongStream;
      n -= 3 * kLongStream;
    }
  }
  if (n >= 3 * kShortStream) {
    const ShiftOperator& shift = short_shift();
    while (n >= 3 * kShortStream) {
      crc = crc_three_streams<kShortStream>(crc, p, shift);
      p += 3 * kShortStream;
      n -= 3 * kShortStream;
    }
  }
  uint64_t c = crc;
  while (n >= 8) {
    c = _mm_crc32_u64(c, load_u64(p));
    p += 8;
    n -= 8;
  }
  crc = static_cast<uint32_t>(c);
  while (n--) crc = _mm_crc32_u8(crc, *p++);
  return crc;
}

#endif  // KILNRT_CRC32C_X86

}  // namespace

bool crc32c_hardware_available() {
#if KILNRT_CRC32C_X86
  return cpu_has_sse42();
#else
  return false;
#endif
}

uint32_t crc32c_software(const void* data, size_t n, uint32_t seed) {
  if (n == 0) return seed;
  return ~crc_raw_software(~seed, static_cast<const uint8_t*>(data), n);
}

uint32_t crc32c_hardware(const void* data, size_t n, uint32_t seed) {
#if KILNRT_CRC32C_X86
  KILNRT_CHECK(cpu_has_sse42(), kInternal, "crc32c", "crc32c_hardware called on a CPU without SSE4.2");
  if (n == 0) return seed;
  return ~crc_raw_hardware(~seed, static_cast<const uint8_t*>(data), n);
#else
  KILNRT_THROW(kInternal, "crc32c", "crc32c_hardware is only available on x86");
#endif
}

uint32_t crc32c(const void* data, size_t n, uint32_t seed) {
#if KILNRT_CRC32C_X86
  if (cpu_has_sse42()) return n == 0 ? seed : ~crc_raw_hardware(~seed, static_cast<const uint8_t*>(data), n);
#endif
  return crc32c_software(data, n, seed);
}

uint64_t hash64(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  const uint32_t first_half = crc32c(p, n / 2);
  const uint32_t whole = crc32c(p + n / 2, n - n / 2, first_half);
  // splitmix64 finaliser over both CRCs and the length, so the hex looks uniform.
  uint64_t z = ((static_cast<uint64_t>(first_half) << 32) | whole) ^ (static_cast<uint64_t>(n) * 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string hash64_hex(const void* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  uint64_t h = hash64(data, n);
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) s[static_cast<size_t>(i)] = digits[h & 0xfu];
  return s;
}

}  // namespace kilnrt
