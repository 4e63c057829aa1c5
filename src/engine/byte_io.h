// Little-endian byte writer and bounds-checked reader for the engine file format.
//
// ByteWriter appends fixed-width little-endian integers, floats (as their bit pattern), length-prefixed strings and
// raw bytes, and can patch a value written earlier. ByteReader reads them back from a byte range of a file; every
// read is checked against the range and a failure throws kilnrt::Error(kInvalidEngine) naming the file (where), the
// section, the absolute file offset and what was being read. Counts are validated against the bytes left
// (count * minimum record size <= remaining), so a damaged count can never cause an allocation larger than the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/check.h"

namespace kilnrt::engine {

class ByteWriter {
 public:
  size_t size() const { return bytes_.size(); }
  std::vector<uint8_t>& bytes() { return bytes_; }
  std::vector<uint8_t> take() { return std::move(bytes_); }
  void reserve(size_t n) { bytes_.reserve(n); }

  void u8(uint8_t v) { bytes_.push_back(v); }
  void u32(uint32_t v) { put_le(v, 4); }
  void i32(int32_t v) { put_le(static_cast<uint32_t>(v), 4); }
  void u64(uint64_t v) { put_le(v, 8); }
  void i64(int64_t v) { put_le(static_cast<uint64_t>(v), 8); }
  void f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    u32(bits);
  }
  // u32 length + bytes (no terminator).
  void str(const std::string& s) {
    KILNRT_CHECK(s.size() <= 0xffffffffu, kInternal, "engine writer", "string of " << s.size() << " bytes is too long");
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  void raw(const void* data, size_t n) {
    if (n == 0) return;
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
  }
  // Zero padding up to the next multiple of `alignment` (a power of two) of the buffer size.
  void pad_to(size_t alignment) {
    const size_t rem = bytes_.size() & (alignment - 1);
    if (rem != 0) bytes_.resize(bytes_.size() + (alignment - rem), 0);
  }
  void patch_u32(size_t pos, uint32_t v) { patch_le(pos, v, 4); }
  void patch_u64(size_t pos, uint64_t v) { patch_le(pos, v, 8); }

 private:
  void put_le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void patch_le(size_t pos, uint64_t v, int n) {
    KILNRT_CHECK(pos + static_cast<size_t>(n) <= bytes_.size(), kInternal, "engine writer", "patch past the end");
    for (int i = 0; i < n; ++i) bytes_[pos + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
  }
  std::vector<uint8_t> bytes_;
};

inline uint32_t read_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}
inline uint64_t read_le64(const uint8_t* p) {
  return static_cast<uint64_t>(read_le32(p)) | static_cast<uint64_t>(read_le32(p + 4)) << 32;
}
inline void write_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void write_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

class ByteReader {
 public:
  // Reads bytes [data, data + size), which lie at absolute offset `file_offset` of the file `label`.
  ByteReader(const uint8_t* data, size_t size, uint64_t file_offset, std::string label, std::string section)
      : data_(data), size_(size), file_offset_(file_offset), label_(std::move(label)), section_(std::move(section)) {}

  size_t remaining() const { return size_ - pos_; }
  size_t position() const { return pos_; }
  bool at_end() const { return pos_ == size_; }
  uint64_t file_offset() const { return file_offset_ + pos_; }
  const std::string& label() const { return label_; }
  const std::string& section() const { return section_; }

  uint8_t u8(const char* what) { return *take(1, what); }
  uint32_t u32(const char* what) { return read_le32(take(4, what)); }
  int32_t i32(const char* what) { return static_cast<int32_t>(u32(what)); }
  uint64_t u64(const char* what) { return read_le64(take(8, what)); }
  int64_t i64(const char* what) { return static_cast<int64_t>(u64(what)); }
  float f32(const char* what) {
    const uint32_t bits = u32(what);
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  bool boolean(const char* what) {
    const uint64_t at = file_offset();
    const uint8_t v = u8(what);
    if (v > 1) fail_at(at, std::string(what) + " is " + std::to_string(v) + ", expected 0 or 1");
    return v != 0;
  }
  std::string str(const char* what) {
    const uint64_t at = file_offset();
    const uint32_t n = u32(what);
    if (n > remaining())
      fail_at(at, std::string(what) + ": string length " + std::to_string(n) + " runs past the end (" +
                      std::to_string(remaining()) + " bytes left)");
    const uint8_t* p = take(n, what);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  // Pointer to the next n bytes (checked), advancing past them.
  const uint8_t* bytes(uint64_t n, const char* what) {
    if (n > remaining())
      fail(std::string(what) + ": " + std::to_string(n) + " bytes run past the end (" + std::to_string(remaining()) +
           " bytes left)");
    return take(static_cast<size_t>(n), what);
  }
  // A u64 element count whose records take at least `min_record_bytes` (>= 1) each; rejects counts that cannot fit
  // in the bytes left and counts above `max_count`.
  uint64_t count(const char* what, size_t min_record_bytes, uint64_t max_count = UINT64_MAX) {
    const uint64_t at = file_offset();
    const uint64_t n = u64(what);
    if (n > max_count)
      fail_at(at, std::string(what) + " " + std::to_string(n) + " exceeds the limit " + std::to_string(max_count));
    if (min_record_bytes == 0) min_record_bytes = 1;
    if (n > remaining() / min_record_bytes)
      fail_at(at, std::string(what) + " " + std::to_string(n) + " is absurd: " + std::to_string(remaining()) +
                      " bytes left in the section");
    return n;
  }
  void expect_end() {
    if (!at_end()) fail(std::to_string(remaining()) + " unexpected bytes at the end of the section");
  }

  [[noreturn]] void fail(const std::string& msg) const { fail_at(file_offset(), msg); }
  [[noreturn]] void fail_at(uint64_t offset, const std::string& msg) const {
    KILNRT_THROW(kInvalidEngine, label_, section_ << " section, offset " << offset << ": " << msg);
  }

 private:
  const uint8_t* take(size_t n, const char* what) {
    if (n > remaining())
      fail(std::string("truncated while reading ") + what + " (" + std::to_string(n) + " bytes needed, " +
           std::to_string(remaining()) + " left)");
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  uint64_t file_offset_;
  std::string label_, section_;
};

}  // namespace kilnrt::engine
