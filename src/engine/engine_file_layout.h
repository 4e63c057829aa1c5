// Engine file layout internals shared by engine_file.cc (sections' contents) and engine_file_layout.cc (header,
// section table, checksums): fixed offsets, section kinds and the validated view of a file. Not a public header.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/byte_io.h"
#include "engine/engine_file.h"

namespace kilnrt::engine::file_layout {

// Header field offsets.
constexpr size_t kOffMagic = 0, kOffVersion = 8, kOffHeaderSize = 12, kOffFileSize = 16, kOffTableOffset = 24,
                 kOffSectionCount = 32, kOffTableCrc = 36, kOffPayloadCrc = 40, kOffFlags = 44, kOffReserved0 = 48,
                 kOffReserved1 = 56, kOffHeaderCrc = 60;
constexpr size_t kSectionEntrySize = 32;  // u32 kind, u32 crc32c, u64 offset, u64 size, u64 reserved
constexpr uint32_t kMaxSections = 64;

enum SectionKind : uint32_t { kSecMetadata = 1, kSecGraph = 2, kSecWeights = 3, kSecBlobs = 4, kSecDeviceWeights = 5 };
constexpr uint32_t kNumSectionKinds = 5;

const char* section_name(uint32_t kind);
std::string hex32(uint32_t v);  // "0x%08x"

struct SectionEntry {
  uint32_t kind = 0, crc = 0;
  uint64_t offset = 0, size = 0;
};

struct ValidatedFile {
  const uint8_t* p = nullptr;
  uint64_t size = 0;
  uint32_t version = 0;
  SectionEntry sections[kNumSectionKinds + 1];  // indexed by kind
  const SectionEntry& section(uint32_t kind) const { return sections[kind]; }
};

// Validates everything up to (and, if `whole_payload`, including) the payload checksum (docs/engine-format.md,
// "Validation on load", steps 1-8).
ValidatedFile validate_file(const void* data, size_t size, const std::string& label, bool whole_payload);
ByteReader section_reader(const ValidatedFile& f, uint32_t kind, const std::string& label);

}  // namespace kilnrt::engine::file_layout
