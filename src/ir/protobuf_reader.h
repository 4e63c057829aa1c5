// A bounds-checked reader of the protobuf wire format, enough to decode ONNX without libprotobuf.
//
// Every read checks the remaining bytes first; malformed input (truncated varint, length past the end, bad wire
// type, nesting too deep, ...) throws kilnrt::Error(kInvalidModel) whose `where` is "<label>: <field path>", e.g.
// "model.onnx: graph.node[12].attribute[0]", and whose message gives the byte offset. Nothing is allocated from a
// size read out of the input before that size has been checked against the bytes that are actually there, so a
// hostile file cannot make the reader hang or allocate without bound.
//
//   pb::Source src{"model.onnx", data, size};
//   pb::Reader model(src);
//   while (model.next()) {
//     switch (model.field()) {
//       case 1: ir_version = model.read_int64(); break;
//       case 7: { pb::FieldPath p(model.path(), "graph"); auto g = model.read_message(&p); ... } break;
//       default: model.skip();
//     }
//   }
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kilnrt::ir::pb {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,  // deprecated groups: skipped, never decoded
  kEndGroup = 4,
  kFixed32 = 5,
};
const char* wire_type_name(WireType w);

// Nested messages deeper than this are rejected (ONNX subgraphs nest 3 levels per If/Loop body).
constexpr int kMaxMessageDepth = 100;

// The whole input: what errors call it and where its bytes start (for absolute offsets in messages).
struct Source {
  std::string label;  // file name or "<memory>"
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// A field path built on the stack as decoding descends; turned into a string only when an error is reported.
// A path node with index >= 0 prints as "name[index]".
struct FieldPath {
  const FieldPath* parent = nullptr;
  const char* name = "";
  int64_t index = -1;
  FieldPath() = default;
  FieldPath(const FieldPath* parent_path, const char* field_name, int64_t element_index = -1)
      : parent(parent_path), name(field_name), index(element_index) {}
  std::string to_string() const;  // "graph.node[12].attribute[0]"
};

// Reads the fields of one message. Cheap to copy (a view; the bytes belong to the caller).
class Reader {
 public:
  // The top-level message: all of `source`.
  explicit Reader(const Source& source, const FieldPath* path = nullptr);

  // Advances to the next field; false at the end of the message. Throws on a malformed tag.
  bool next();
  uint32_t field() const { return field_; }
  WireType wire_type() const { return wire_; }

  // Value reads for the current field. Each checks the wire type first.
  uint64_t read_varint();
  int64_t read_int64() { return static_cast<int64_t>(read_varint()); }
  int32_t read_int32();  // rejects values outside int32
  uint32_t read_fixed32();
  uint64_t read_fixed64();
  float read_float();
  double read_double();
  std::string_view read_bytes();  // view into the source
  std::string read_string() { return std::string(read_bytes()); }
  // A nested message; `child_path` must outlive the returned reader (keep it on the caller's stack).
  Reader read_message(const FieldPath* child_path);

  // Repeated scalars: accept both packed (length-delimited) and unpacked encodings, appending to `out`.
  void read_repeated_varint(std::vector<int64_t>* out);
  void read_repeated_float(std::vector<float>* out);
  void read_repeated_double(std::vector<double>* out);

  // Skips the current field's value (groups included, with their own nesting limit).
  void skip();

  // Throws kInvalidModel for this message: where = "<label>: <path>", message = `what` + byte offset.
  [[noreturn]] void fail(const std::string& what) const;
  // The error location string "<label>: <path>" (or "<label>" at the top level).
  std::string where() const;
  const FieldPath* path() const { return path_; }
  const Source& source() const { return *source_; }
  int depth() const { return depth_; }
  size_t offset() const { return static_cast<size_t>(pos_ - source_->data); }

 private:
  Reader(const Source* source, const uint8_t* begin, const uint8_t* end, const FieldPath* path, int depth);
  uint64_t decode_varint(const char* what);
  void expect(WireType w, const char* what) const;
  void skip_group(uint32_t start_field);

  const Source* source_;
  const uint8_t* pos_;
  const uint8_t* end_;
  const FieldPath* path_;
  int depth_;
  uint32_t field_ = 0;
  WireType wire_ = WireType::kVarint;
  const uint8_t* field_start_ = nullptr;  // tag position of the current field, for messages
};

}  // namespace kilnrt::ir::pb
