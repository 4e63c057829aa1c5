// Engine file format v2: serialization of an optimized graph + build metadata, and validating deserialization.
// The byte layout is documented in docs/engine-format.md.
//
//   std::vector<uint8_t> bytes = serialize_engine(graph, meta);
//   LoadedEngine e = deserialize_engine(bytes.data(), bytes.size(), "model.engine");
//
// Loading validates the whole file before building anything; every problem throws kilnrt::Error with
// ErrorCode::kInvalidEngine, the file label in where() and a message naming the problem (truncated, not an engine
// file, newer format version, checksum mismatch, or the inconsistent field with its section and offset). A damaged
// or hostile file never crashes, hangs or allocates much more than its own size. The checksums detect damage, not
// tampering: an engine file may carry GPU code, so load only trusted files.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/device_weights.h"
#include "ir/graph.h"
#include "kilnrt/engine.h"

namespace kilnrt::engine {

// v2: weights may be device-only, and CUDA engines carry their device weight image (device_weights.h).
constexpr uint32_t kEngineFormatVersion = 2;
constexpr char kEngineMagic[8] = {'K', 'I', 'L', 'N', 'R', 'T', 'E', 'N'};
constexpr size_t kEngineHeaderSize = 64;
// Weight data (and the weights section) start at multiples of this within the file, so a mapped file can be
// uploaded to the GPU straight from its pages.
constexpr size_t kWeightAlignment = 256;

struct EngineMetadata {
  uint32_t format_version = kEngineFormatVersion;  // on load: the file's version
  std::string kilnrt_version;
  std::string target;    // "cpu" or "sm_90" ...
  std::string gpu_name;  // "" for cpu
  int32_t sm_count = 0;
  std::string cuda_version, cudnn_version, cublaslt_version;  // "" when not used
  std::string build_options;                                  // "device=cpu fp16=0 ..."
  std::string model_hash;                                     // hash64_hex() of the ONNX bytes
  std::vector<std::vector<kilnrt::InputProfile>> profiles;
  std::vector<kilnrt::TensorInfo> inputs, outputs;
  std::vector<std::pair<std::string, std::string>> layer_tactics;  // node name -> placement/tactic, free-form
  std::map<std::string, std::vector<uint8_t>> blobs;               // named opaque sections (cubins, tactic data)
  // Set on load (ignored when writing): bytes of the weights section (constant data plus alignment padding).
  uint64_t weights_bytes = 0;
};

// Writes the graph (nodes, attributes of every kind including tensors and subgraphs, value types with symbolic dims,
// inputs, outputs, opsets, producer), its constants as 256-byte-aligned weights, and the metadata. Deterministic:
// the same graph and metadata give the same bytes. Throws kInternal for a graph it cannot represent (an undefined
// constant, a graph attribute without a graph). `device_weights` (CUDA engines, may be null): the image stored in the
// device weights section; the constants it lists as device_only are written without host data.
std::vector<uint8_t> serialize_engine(const ir::Graph& graph, const EngineMetadata& meta,
                                      const DeviceWeightImage* device_weights = nullptr);

struct LoadedEngine {
  ir::Graph graph;
  EngineMetadata meta;
  // The device weight image (empty for CPU engines): its data points into the bytes passed to deserialize_engine.
  DeviceWeightImage device_weights;
};

// Validates and parses a whole engine file. `label` names the file in errors ("model.engine" or "<memory>").
// Checks, in order: size >= header, magic, format version, header size, header checksum, file size (truncated /
// trailing bytes), section table, whole-payload checksum, then the sections' contents.
LoadedEngine deserialize_engine(const void* data, size_t size, const std::string& label);

// Header + metadata only (for a quick inspect): validates the header, the section table and the metadata section's
// own checksum, but neither reads nor checksums the graph and weights. `size` must still be the whole file's size.
EngineMetadata read_engine_header(const void* data, size_t size, const std::string& label);

// Test / fuzzing hook: recomputes every checksum of a (possibly mutated) engine file in place, so that mutations
// reach the parser instead of stopping at the checksum check. Leaves the bytes alone where the header or section
// table is too broken to locate what to checksum. Never throws.
void reseal_engine_checksum(std::vector<uint8_t>& bytes);

}  // namespace kilnrt::engine
