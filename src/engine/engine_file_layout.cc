// Engine file header, section table and checksums (engine_file_layout.h; layout: docs/engine-format.md).
#include "engine/engine_file_layout.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/check.h"
#include "core/checksum.h"

namespace kilnrt::engine {
namespace file_layout {

const char* section_name(uint32_t kind) {
  switch (kind) {
    case kSecMetadata: return "metadata";
    case kSecGraph: return "graph";
    case kSecWeights: return "weights";
    case kSecBlobs: return "blobs";
    case kSecDeviceWeights: return "device weights";
    default: return "unknown";
  }
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

namespace {

std::string printable_magic(const uint8_t* p) {
  std::string s = "'";
  for (int i = 0; i < 8; ++i) {
    const char c = static_cast<char>(p[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      s += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", p[i]);
      s += buf;
    }
  }
  return s + "'";
}

void check_section_crc(const ValidatedFile& f, uint32_t kind, const std::string& label) {
  const SectionEntry& e = f.section(kind);
  const uint32_t crc = crc32c(f.p + e.offset, e.size);
  KILNRT_CHECK(crc == e.crc, kInvalidEngine, label,
               "checksum mismatch: file is damaged (" << section_name(kind) << " section: stored crc32c "
                                                      << hex32(e.crc) << ", computed " << hex32(crc) << ")");
}

}  // namespace

ValidatedFile validate_file(const void* data, size_t size, const std::string& label, bool whole_payload) {
  KILNRT_CHECK(data != nullptr || size == 0, kInvalidArgument, label, "null engine data");
  const auto* p = static_cast<const uint8_t*>(data);
  KILNRT_CHECK(size >= kEngineHeaderSize, kInvalidEngine, label,
               "file is " << size << " bytes, smaller than the " << kEngineHeaderSize
                          << "-byte engine header: truncated or not a kilnrt engine file");
  KILNRT_CHECK(std::equal(kEngineMagic, kEngineMagic + 8, p), kInvalidEngine, label,
               "not a kilnrt engine file (magic " << printable_magic(p) << ", expected 'KILNRTEN')");
  ValidatedFile f;
  f.p = p;
  f.size = size;
  f.version = read_le32(p + kOffVersion);
  KILNRT_CHECK(f.version <= kEngineFormatVersion, kInvalidEngine, label,
               "engine format version " << f.version << " is newer than this kilnrt supports (" << kEngineFormatVersion
                                        << "): rebuild the engine or upgrade kilnrt");
  KILNRT_CHECK(f.version >= 1, kInvalidEngine, label, "engine format version 0 is invalid: file is damaged");
  KILNRT_CHECK(f.version == kEngineFormatVersion, kInvalidEngine, label,
               "engine format version " << f.version << " is older than this kilnrt supports (" << kEngineFormatVersion
                                        << "): rebuild the engine with this kilnrt");
  const uint32_t header_size = read_le32(p + kOffHeaderSize);
  KILNRT_CHECK(header_size == kEngineHeaderSize, kInvalidEngine, label,
               "header size " << header_size << " is wrong for format version " << f.version << " (expected "
                              << kEngineHeaderSize << "): file is damaged");
  const uint32_t header_crc = crc32c(p, kOffHeaderCrc);
  const uint32_t stored_header_crc = read_le32(p + kOffHeaderCrc);
  KILNRT_CHECK(header_crc == stored_header_crc, kInvalidEngine, label,
               "checksum mismatch: file is damaged (engine header: stored crc32c "
                   << hex32(stored_header_crc) << ", computed " << hex32(header_crc) << ")");
  const uint64_t file_size = read_le64(p + kOffFileSize);
  KILNRT_CHECK(size >= file_size, kInvalidEngine, label,
               "file is " << size << " bytes but header says " << file_size << ": truncated");
  KILNRT_CHECK(size == file_size, kInvalidEngine, label,
               "file is " << size << " bytes but header says " << file_size
                          << ": trailing bytes after the engine (damaged or concatenated file)");
  KILNRT_CHECK(read_le32(p + kOffFlags) == 0 && read_le64(p + kOffReserved0) == 0 && read_le32(p + kOffReserved1) == 0,
               kInvalidEngine, label, "reserved header fields are not zero: file is damaged");

  // Section table.
  const uint64_t table_offset = read_le64(p + kOffTableOffset);
  const uint32_t count = read_le32(p + kOffSectionCount);
  KILNRT_CHECK(count <= kMaxSections, kInvalidEngine, label, "section count " << count << " is absurd");
  KILNRT_CHECK(
      table_offset >= kEngineHeaderSize && table_offset <= size && count * kSectionEntrySize <= size - table_offset,
      kInvalidEngine, label,
      "section table (offset " << table_offset << ", " << count << " entries) lies outside the file");
  const uint64_t table_end = table_offset + count * kSectionEntrySize;
  const uint32_t table_crc = crc32c(p + table_offset, count * kSectionEntrySize);
  const uint32_t stored_table_crc = read_le32(p + kOffTableCrc);
  KILNRT_CHECK(table_crc == stored_table_crc, kInvalidEngine, label,
               "checksum mismatch: file is damaged (section table: stored crc32c "
                   << hex32(stored_table_crc) << ", computed " << hex32(table_crc) << ")");
  std::vector<SectionEntry> entries;
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* e = p + table_offset + i * kSectionEntrySize;
    SectionEntry s;
    s.kind = read_le32(e);
    s.crc = read_le32(e + 4);
    s.offset = read_le64(e + 8);
    s.size = read_le64(e + 16);
    const uint64_t reserved = read_le64(e + 24);
    KILNRT_CHECK(s.kind >= 1 && s.kind <= kNumSectionKinds, kInvalidEngine, label,
                 "section table entry " << i << " has unknown kind " << s.kind);
    KILNRT_CHECK(reserved == 0, kInvalidEngine, label, "section table entry " << i << ": reserved field not zero");
    KILNRT_CHECK(f.sections[s.kind].kind == 0, kInvalidEngine, label,
                 "section '" << section_name(s.kind) << "' appears twice");
    KILNRT_CHECK(s.offset >= table_end && s.offset <= size && s.size <= size - s.offset, kInvalidEngine, label,
                 "section '" << section_name(s.kind) << "' (offset " << s.offset << ", " << s.size
                             << " bytes) lies outside the file (" << size << " bytes) or overlaps the header");
    f.sections[s.kind] = s;
    entries.push_back(s);
  }
  for (uint32_t kind = 1; kind <= kNumSectionKinds; ++kind)
    KILNRT_CHECK(f.sections[kind].kind == kind, kInvalidEngine, label,
                 "section '" << section_name(kind) << "' is missing");
  std::sort(entries.begin(), entries.end(),
            [](const SectionEntry& a, const SectionEntry& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < entries.size(); ++i)
    KILNRT_CHECK(
        entries[i - 1].offset + entries[i - 1].size <= entries[i].offset, kInvalidEngine, label,
        "sections '" << section_name(entries[i - 1].kind) << "' and '" << section_name(entries[i].kind) << "' overlap");
  for (uint32_t kind : {uint32_t(kSecWeights), uint32_t(kSecDeviceWeights)})
    KILNRT_CHECK(f.sections[kind].offset % kWeightAlignment == 0, kInvalidEngine, label,
                 section_name(kind) << " section offset " << f.sections[kind].offset << " is not aligned to "
                                    << kWeightAlignment);

  if (whole_payload) {
    const uint32_t payload_crc = crc32c(p + kEngineHeaderSize, size - kEngineHeaderSize);
    const uint32_t stored = read_le32(p + kOffPayloadCrc);
    KILNRT_CHECK(payload_crc == stored, kInvalidEngine, label,
                 "checksum mismatch: file is damaged (stored crc32c " << hex32(stored) << ", computed "
                                                                      << hex32(payload_crc) << ")");
    // The payload checksum covers every byte once; the small sections' own checksums are checked as well (the two
    // big ones, weights and device weights, are not read twice: loading time is dominated by them).
    for (uint32_t kind : {uint32_t(kSecMetadata), uint32_t(kSecGraph), uint32_t(kSecBlobs)})
      check_section_crc(f, kind, label);
  } else {
    check_section_crc(f, kSecMetadata, label);
  }
  return f;
}

ByteReader section_reader(const ValidatedFile& f, uint32_t kind, const std::string& label) {
  const SectionEntry& e = f.section(kind);
  return ByteReader(f.p + e.offset, static_cast<size_t>(e.size), e.offset, label, section_name(kind));
}

}  // namespace file_layout

using namespace file_layout;

void reseal_engine_checksum(std::vector<uint8_t>& bytes) {
  if (bytes.size() < kEngineHeaderSize) return;
  uint8_t* p = bytes.data();
  const uint64_t size = bytes.size();
  const uint64_t table_offset = read_le64(p + kOffTableOffset);
  const uint64_t count = read_le32(p + kOffSectionCount);
  if (count <= kMaxSections && table_offset >= kEngineHeaderSize && table_offset <= size &&
      count * kSectionEntrySize <= size - table_offset) {
    for (uint64_t i = 0; i < count; ++i) {
      uint8_t* e = p + table_offset + i * kSectionEntrySize;
      const uint64_t offset = read_le64(e + 8), len = read_le64(e + 16);
      if (offset <= size && len <= size - offset) write_le32(e + 4, crc32c(p + offset, len));
    }
    write_le32(p + kOffTableCrc, crc32c(p + table_offset, count * kSectionEntrySize));
  }
  write_le32(p + kOffPayloadCrc, crc32c(p + kEngineHeaderSize, size - kEngineHeaderSize));
  write_le32(p + kOffHeaderCrc, crc32c(p, kOffHeaderCrc));
}

}  // namespace kilnrt::engine
