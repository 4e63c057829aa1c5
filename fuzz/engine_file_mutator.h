// Structure-aware mutator for engine files (docs/engine-format.md), used by engine_file_fuzzer.cc through
// LLVMFuzzerCustomMutator. A plain byte mutation almost always dies at the header / payload checksum, so each
// mutation here picks one structural target:
//   - a header field (sizes, offsets, counts, version, flags, reserved words) set to an "interesting" value,
//   - a section-table entry (kind, offset, size, reserved),
//   - the bytes of one section: libFuzzer's own mutation of the section's contents, in place or resized (later
//     sections' offsets, the section size and the header's file size are moved along),
//   - an integer inside a section overwritten with a boundary value (lengths, counts, dtypes, ranks, offsets),
// and then, most of the time, fixes the header's file-size field and recomputes every checksum through
// engine::reseal_engine_checksum so that the mutant reaches the parsers. Now and then it leaves the checksums
// stale or the size wrong, so that the early checks stay covered too.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/engine_file.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace kilnrt::fuzz {

namespace detail {

constexpr size_t kOffFileSize = 16, kOffTableOffset = 24, kOffSectionCount = 32, kEntrySize = 32;

inline uint64_t get(const std::vector<uint8_t>& b, size_t off, int width) {
  uint64_t v = 0;
  for (int i = 0; i < width && off + i < b.size(); ++i) v |= uint64_t(b[off + i]) << (8 * i);
  return v;
}
inline void put(std::vector<uint8_t>& b, size_t off, int width, uint64_t v) {
  for (int i = 0; i < width && off + i < b.size(); ++i) b[off + i] = uint8_t(v >> (8 * i));
}

struct Section {
  size_t entry;  // file offset of its table entry
  uint64_t offset, size;
};

inline std::vector<Section> sections(const std::vector<uint8_t>& b) {
  std::vector<Section> out;
  if (b.size() < engine::kEngineHeaderSize) return out;
  const uint64_t table = get(b, kOffTableOffset, 8), count = get(b, kOffSectionCount, 4);
  if (count > 64 || table < engine::kEngineHeaderSize || table > b.size() || count * kEntrySize > b.size() - table)
    return out;
  for (uint64_t i = 0; i < count; ++i) {
    const size_t e = static_cast<size_t>(table + i * kEntrySize);
    out.push_back({e, get(b, e + 8, 8), get(b, e + 16, 8)});
  }
  return out;
}

inline uint64_t interesting(std::mt19937_64& rng, uint64_t current, uint64_t file_size) {
  static const uint64_t values[] = {0,
                                    1,
                                    2,
                                    3,
                                    4,
                                    7,
                                    8,
                                    16,
                                    63,
                                    64,
                                    255,
                                    256,
                                    257,
                                    4096,
                                    0x7f,
                                    0x80,
                                    0xff,
                                    0x7fff,
                                    0x8000,
                                    0xffff,
                                    0x7fffffff,
                                    0x80000000,
                                    0xffffffff,
                                    0x100000000ull,
                                    0x7fffffffffffffffull,
                                    0x8000000000000000ull,
                                    0xffffffffffffffffull};
  switch (rng() % 4) {
    case 0: return values[rng() % (sizeof(values) / sizeof(values[0]))];
    case 1: return current + 1 + rng() % 8;
    case 2: return current - 1 - rng() % 8;
    default: return file_size + (rng() % 17) - 8;
  }
}

}  // namespace detail

inline size_t mutate_engine_file(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  using namespace detail;
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> b(data, data + size);
  const std::vector<Section> secs = sections(b);
  const int strategy = b.size() < engine::kEngineHeaderSize ? 0 : static_cast<int>(rng() % 8);
  bool fix_size = rng() % 16 != 0, reseal = rng() % 16 != 0;
  switch (strategy) {
    case 0: {  // generic: libFuzzer's byte-level mutation of the whole file
      b.resize(std::max(max_size, b.size()));
      b.resize(LLVMFuzzerMutate(b.data(), size, b.size()));
      fix_size = rng() % 2 == 0;
      break;
    }
    case 1: {  // a header field
      static const std::pair<size_t, int> fields[] = {{8, 4},  {12, 4}, {16, 8}, {24, 8},
                                                      {32, 4}, {44, 4}, {48, 8}, {56, 4}};
      const auto [off, width] = fields[rng() % 8];
      put(b, off, width, interesting(rng, get(b, off, width), b.size()));
      if (off == kOffFileSize) fix_size = false;
      break;
    }
    case 2: {  // a section-table entry field
      if (secs.empty()) break;
      const Section& s = secs[rng() % secs.size()];
      static const std::pair<size_t, int> fields[] = {{0, 4}, {8, 8}, {16, 8}, {24, 8}};
      const auto [off, width] = fields[rng() % 4];
      put(b, s.entry + off, width, interesting(rng, get(b, s.entry + off, width), b.size()));
      break;
    }
    case 3:
    case 4:
    case 5: {  // a section's contents, through libFuzzer's mutation (possibly resized)
      if (secs.empty()) break;
      const Section s = secs[rng() % secs.size()];
      if (s.offset > b.size() || s.size > b.size() - s.offset) break;
      std::vector<uint8_t> body(b.begin() + s.offset, b.begin() + s.offset + s.size);
      const size_t room = max_size > b.size() ? max_size - b.size() : 0;
      const bool resize = strategy == 5;
      const size_t cap = body.size() + (resize ? std::min<size_t>(room, 256) : 0);
      body.resize(std::max<size_t>(cap, 1));
      size_t n = LLVMFuzzerMutate(body.data(), s.size, body.size());
      if (!resize) n = s.size;
      body.resize(n);
      const uint64_t delta = uint64_t(n) - s.size;  // modular: offsets may be anything in a mutant
      b.erase(b.begin() + s.offset, b.begin() + s.offset + s.size);
      b.insert(b.begin() + s.offset, body.begin(), body.end());
      put(b, s.entry + 16, 8, n);
      for (const Section& t : secs)  // move the sections behind it (entries sit before every section)
        if (t.entry != s.entry && t.offset > s.offset) put(b, t.entry + 8, 8, t.offset + delta);
      break;
    }
    default: {  // an aligned integer inside a section set to a boundary value
      if (secs.empty()) break;
      const Section& s = secs[rng() % secs.size()];
      if (s.offset > b.size() || s.size > b.size() - s.offset || s.size < 4) break;
      const int width = rng() % 2 ? 4 : 8;
      const size_t off = s.offset + (rng() % (s.size - (width == 8 && s.size >= 8 ? 7 : 3)));
      put(b, off, width, interesting(rng, get(b, off, width), s.size));
      break;
    }
  }
  if (b.size() > max_size) b.resize(max_size);
  if (b.size() >= engine::kEngineHeaderSize) {
    if (fix_size) put(b, kOffFileSize, 8, b.size());
    if (reseal) engine::reseal_engine_checksum(b);
  }
  std::memcpy(data, b.data(), b.size());
  return b.size();
}

}  // namespace kilnrt::fuzz
