#include "ir/protobuf_reader.h"

#include <cstring>

#include "core/check.h"

namespace kilnrt::ir::pb {

namespace {
constexpr int kMaxGroupDepth = 32;
constexpr uint32_t kMaxFieldNumber = (1u << 29) - 1;
}  // namespace

const char* wire_type_name(WireType w) {
  switch (w) {
    case WireType::kVarint: return "varint";
    case WireType::kFixed64: return "fixed64";
    case WireType::kLengthDelimited: return "length-delimited";
    case WireType::kStartGroup: return "start-group";
    case WireType::kEndGroup: return "end-group";
    case WireType::kFixed32: return "fixed32";
  }
  return "invalid";
}

std::string FieldPath::to_string() const {
  // Collect from leaf to root, then print root first.
  std::vector<const FieldPath*> chain;
  for (const FieldPath* p = this; p != nullptr; p = p->parent) chain.push_back(p);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const FieldPath* p = *it;
    if (p->name == nullptr || p->name[0] == '\0') {
      if (p->index >= 0) out += "[" + std::to_string(p->index) + "]";
      continue;
    }
    if (!out.empty()) out += '.';
    out += p->name;
    if (p->index >= 0) out += "[" + std::to_string(p->index) + "]";
  }
  return out;
}

Reader::Reader(const Source& source, const FieldPath* path)
    : Reader(&source, source.data, source.data + source.size, path, 0) {
  KILNRT_CHECK(source.data != nullptr || source.size == 0, kInvalidArgument, source.label,
               "protobuf source has a null data pointer and " << source.size << " bytes");
}

Reader::Reader(const Source* source, const uint8_t* begin, const uint8_t* end, const FieldPath* path, int depth)
    : source_(source), pos_(begin), end_(end), path_(path), depth_(depth), field_start_(begin) {}

std::string Reader::where() const {
  std::string p = path_ ? path_->to_string() : std::string();
  return p.empty() ? source_->label : source_->label + ": " + p;
}

void Reader::fail(const std::string& what) const {
  KILNRT_THROW(kInvalidModel, where(), what << " (byte offset " << (field_start_ - source_->data) << ")");
}

uint64_t Reader::decode_varint(const char* what) {
  uint64_t result = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos_ >= end_) fail(std::string("truncated varint in ") + what);
    const uint8_t byte = *pos_++;
    if (i == 9 && byte > 1) fail(std::string("varint longer than 64 bits in ") + what);
    result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) return result;
  }
  fail(std::string("varint longer than 10 bytes in ") + what);
}

bool Reader::next() {
  if (pos_ >= end_) return false;
  field_start_ = pos_;
  const uint64_t tag = decode_varint("field tag");
  const uint64_t wire = tag & 7u;
  const uint64_t number = tag >> 3;
  if (number == 0) fail("field number 0 is invalid (corrupt data?)");
  if (number > kMaxFieldNumber) fail("field number " + std::to_string(number) + " is out of range");
  if (wire > 5) fail("invalid wire type " + std::to_string(wire) + " for field " + std::to_string(number));
  field_ = static_cast<uint32_t>(number);
  wire_ = static_cast<WireType>(wire);
  if (wire_ == WireType::kEndGroup) fail("unexpected end-group tag for field " + std::to_string(number));
  return true;
}

void Reader::expect(WireType w, const char* what) const {
  if (wire_ != w) {
    fail("field " + std::to_string(field_) + " has wire type " + wire_type_name(wire_) + ", expected " +
         wire_type_name(w) + " for " + what);
  }
}

uint64_t Reader::read_varint() {
  expect(WireType::kVarint, "an integer");
  return decode_varint("field value");
}

int32_t Reader::read_int32() {
  const int64_t v = read_int64();
  if (v < INT32_MIN || v > INT32_MAX) fail("value " + std::to_string(v) + " does not fit a 32-bit field");
  return static_cast<int32_t>(v);
}

uint32_t Reader::read_fixed32() {
  expect(WireType::kFixed32, "a 32-bit value");
  if (end_ - pos_ < 4) fail("truncated 32-bit value");
  uint32_t v;
  std::memcpy(&v, pos_, 4);  // the wire format is little-endian, as are all hosts kilnrt targets
  pos_ += 4;
  return v;
}

uint64_t Reader::read_fixed64() {
  expect(WireType::kFixed64, "a 64-bit value");
  if (end_ - pos_ < 8) fail("truncated 64-bit value");
  uint64_t v;
  std::memcpy(&v, pos_, 8);
  pos_ += 8;
  return v;
}

float Reader::read_float() {
  const uint32_t bits = read_fixed32();
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double Reader::read_double() {
  const uint64_t bits = read_fixed64();
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

std::string_view Reader::read_bytes() {
  expect(WireType::kLengthDelimited, "bytes, a string or a message");
  const uint64_t len = decode_varint("length prefix");
  const uint64_t left = static_cast<uint64_t>(end_ - pos_);
  if (len > left) {
    fail("length " + std::to_string(len) + " runs past the end of the enclosing message (" + std::to_string(left) +
         " bytes left; file truncated?)");
  }
  std::string_view v(reinterpret_cast<const char*>(pos_), static_cast<size_t>(len));
  pos_ += len;
  return v;
}

Reader Reader::read_message(const FieldPath* child_path) {
  const std::string_view bytes = read_bytes();
  if (depth_ + 1 > kMaxMessageDepth) {
    Reader child(source_, field_start_, field_start_, child_path, depth_ + 1);
    child.fail("messages nested deeper than " + std::to_string(kMaxMessageDepth) + " levels");
  }
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  return Reader(source_, b, b + bytes.size(), child_path, depth_ + 1);
}

void Reader::read_repeated_varint(std::vector<int64_t>* out) {
  if (wire_ == WireType::kVarint) {
    out->push_back(read_int64());
    return;
  }
  expect(WireType::kLengthDelimited, "repeated integers");
  const std::string_view bytes = read_bytes();
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  Reader packed(source_, b, b + bytes.size(), path_, depth_);
  packed.field_start_ = b;
  // Every varint is at least one byte: reserve no more than that bound.
  out->reserve(out->size() + bytes.size());
  while (packed.pos_ < packed.end_) {
    packed.field_start_ = packed.pos_;
    out->push_back(static_cast<int64_t>(packed.decode_varint("packed repeated integers")));
  }
}

void Reader::read_repeated_float(std::vector<float>* out) {
  if (wire_ == WireType::kFixed32) {
    out->push_back(read_float());
    return;
  }
  expect(WireType::kLengthDelimited, "repeated floats");
  const std::string_view bytes = read_bytes();
  if (bytes.size() % 4 != 0) fail("packed floats: " + std::to_string(bytes.size()) + " bytes is not a multiple of 4");
  const size_t n = bytes.size() / 4;
  const size_t old = out->size();
  out->resize(old + n);
  if (n) std::memcpy(out->data() + old, bytes.data(), bytes.size());
}

void Reader::read_repeated_double(std::vector<double>* out) {
  if (wire_ == WireType::kFixed64) {
    out->push_back(read_double());
    return;
  }
  expect(WireType::kLengthDelimited, "repeated doubles");
  const std::string_view bytes = read_bytes();
  if (bytes.size() % 8 != 0) fail("packed doubles: " + std::to_string(bytes.size()) + " bytes is not a multiple of 8");
  const size_t n = bytes.size() / 8;
  const size_t old = out->size();
  out->resize(old + n);
  if (n) std::memcpy(out->data() + old, bytes.data(), bytes.size());
}

void Reader::skip_group(uint32_t start_field) {
  // Iterative: a stack of open group field numbers, bounded by kMaxGroupDepth.
  std::vector<uint32_t> open{start_field};
  while (!open.empty()) {
    if (pos_ >= end_) fail("unterminated group (field " + std::to_string(open.back()) + ")");
    field_start_ = pos_;
    const uint64_t tag = decode_varint("field tag inside a group");
    const uint64_t wire = tag & 7u;
    const uint64_t number = tag >> 3;
    if (number == 0 || number > kMaxFieldNumber) fail("invalid field number inside a group");
    switch (wire) {
      case 0: decode_varint("varint inside a group"); break;
      case 1:
        if (end_ - pos_ < 8) fail("truncated 64-bit value inside a group");
        pos_ += 8;
        break;
      case 2: {
        const uint64_t len = decode_varint("length prefix inside a group");
        if (len > static_cast<uint64_t>(end_ - pos_)) fail("length inside a group runs past the end of the message");
        pos_ += len;
        break;
      }
      case 3:
        if (open.size() >= static_cast<size_t>(kMaxGroupDepth)) fail("groups nested too deeply");
        open.push_back(static_cast<uint32_t>(number));
        break;
      case 4:
        if (number != open.back()) {
          fail("end-group tag for field " + std::to_string(number) + " closes group " + std::to_string(open.back()));
        }
        open.pop_back();
        break;
      case 5:
        if (end_ - pos_ < 4) fail("truncated 32-bit value inside a group");
        pos_ += 4;
        break;
      default: fail("invalid wire type " + std::to_string(wire) + " inside a group");
    }
  }
}

void Reader::skip() {
  switch (wire_) {
    case WireType::kVarint: decode_varint("skipped field"); break;
    case WireType::kFixed64:
      if (end_ - pos_ < 8) fail("truncated 64-bit value");
      pos_ += 8;
      break;
    case WireType::kLengthDelimited: read_bytes(); break;
    case WireType::kStartGroup: {
      const uint32_t f = field_;
      skip_group(f);
      break;
    }
    case WireType::kEndGroup: fail("unexpected end-group tag");
    case WireType::kFixed32:
      if (end_ - pos_ < 4) fail("truncated 32-bit value");
      pos_ += 4;
      break;
  }
}

}  // namespace kilnrt::ir::pb
