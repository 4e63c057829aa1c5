// Internals the ONNX importer's files share: the import state, where an element is reported, ONNX element types and
// TensorProto decoding (onnx_tensor_import.cc). Not a public header: the importer's API is ir/onnx_import.h.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "ir/graph.h"
#include "ir/protobuf_reader.h"

namespace kilnrt::ir::onnx_detail {

struct ImportContext {
  std::string label;     // model file name for messages
  std::string base_dir;  // external data directory; "" = external data not allowed
  std::map<std::string, int64_t> opsets;
  std::string producer;
};

// TensorProto.DataType codes that kilnrt's DType does not have (the rest are DType values).
enum OnnxOnlyType : int32_t {
  kOnnxUInt16 = 4,
  kOnnxInt16 = 5,
  kOnnxString = 8,
  kOnnxUInt32 = 12,
  kOnnxUInt64 = 13,
  kOnnxComplex64 = 14,
  kOnnxComplex128 = 15,
  kOnnxLastKnown = 25,  // newest code in onnx.proto (float8/int4/float4/uint2... live in 17..25)
};

// "<label>: <path>" — where an element without a usable name is reported.
std::string location(const ImportContext& ctx, const pb::Reader& r);

// Maps an ONNX element type to a DType. `what` ("tensor 'w'", "input 'x'") and `where` go into the error.
DType dtype_from_onnx(int64_t code, const std::string& where, const std::string& what);

// A TensorProto (raw, typed or external data) -> (name, tensor), checked against its dims and dtype.
std::pair<std::string, Tensor> decode_tensor(pb::Reader r, const ImportContext& ctx);

}  // namespace kilnrt::ir::onnx_detail
