// The CUDA backend's layer interface and registry. One CudaLayer per graph node, created when an engine is loaded
// (it may upload weights then, once); the registry maps op_type -> factory with a supports() check the builder asks
// before writing a CUDA engine, so an unsupported node is a build-time error naming the node.
//
// Per-run data reaches a layer through LayerLaunch: the concrete input/output shapes (inferred on the host for the
// current input shapes), device pointers, host values of inputs that are shape computations or constants, the
// context's stream, library handles and workspace. Layers keep no per-context state; per-shape caches (cuDNN
// algorithms) are guarded by the layer itself.
#pragma once
#include <initializer_list>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/kernels/kernels.h"
#include "core/check.h"
#include "ir/graph.h"
#include "kilnrt/tensor.h"

namespace kilnrt::backends::cuda {

using StreamT = kilnrt::cuda::kernels::StreamT;

// Constants of the graph uploaded to the device once per engine (name -> device pointer).
class DeviceWeights {
 public:
  virtual ~DeviceWeights() = default;
  // Device copy of constant `name` (uploaded at load). Throws naming the constant when it was not uploaded.
  virtual const void* get(const std::string& name) const = 0;
  // Uploads a host tensor made by a layer at load (folded BatchNorm scales ...) and returns its device pointer.
  virtual const void* upload(const std::string& key, const Tensor& host) = 0;
  // The device copy of `key` when it is on the device already (uploaded, or in the engine's stored device weight
  // image: engine format v2), else nullptr. Layers ask first, so that loading an engine makes no host tensors.
  virtual const void* find(const std::string& key) const {
    (void)key;
    return nullptr;
  }
  // False for a constant the engine stores for the GPU only: its graph tensor has dtype and shape but no values.
  virtual bool has_host_data(const std::string& constant) const {
    (void)constant;
    return true;
  }
};

struct LayerTensor {
  const void* data = nullptr;  // device pointer (null for an omitted optional input or a 0-element tensor)
  DType dtype = DType::kUndefined;
  Shape shape;
  const Tensor* host = nullptr;  // host value when known (constants, shape computations), else null
  bool present = false;
  bool nhwc = false;  // 4-D value stored N,H,W,C (shape stays N,C,H,W): only for layers that supports_nhwc()
  int64_t numel() const { return shape_numel(shape); }
};

struct LayerOutput {
  void* data = nullptr;
  DType dtype = DType::kUndefined;
  Shape shape;
  bool present = false;
  bool nhwc = false;  // see LayerTensor::nhwc
  int64_t numel() const { return shape_numel(shape); }
};

// Bytes of the workspace every execution context gives its layers (LayerLaunch::workspace).
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

struct LibraryHandles;  // cuBLASLt / cuDNN handles of one execution context (cuda_libs.h)

struct LayerLaunch {
  std::vector<LayerTensor> inputs;
  std::vector<LayerOutput> outputs;
  StreamT stream = nullptr;
  LibraryHandles* libs = nullptr;
  void* workspace = nullptr;  // context workspace (kWorkspaceBytes)
  size_t workspace_bytes = 0;
};

class CudaLayer {
 public:
  virtual ~CudaLayer() = default;
  // "cudnn:conv-fwd-algo", "cublaslt:matmul", "kernel:elementwise", "alias" ...
  virtual std::string tactic() const = 0;
  // Inputs the layer reads on the host (shape inputs such as Reshape's shape): they must be constants or shape
  // computations. Default: none.
  virtual std::vector<int> host_inputs() const { return {}; }
  // True when the layer takes float activations in 16-bit storage (LayerTensor / LayerOutput dtype kFloat16 or
  // kBFloat16 where the graph says float32) in --fp16 / --bf16 engines. Layers that do not are run as a float32
  // island: the plan converts their 16-bit inputs to float32 scratch and their outputs back.
  virtual bool supports_16bit() const { return false; }
  // True when the layer can run with input 0 (and input 3, a residual) and output 0 4-D and stored NHWC; the plan
  // (layout_plan.h, 16-bit engines with KILNRT_CUDA_NHWC=1) then sets LayerTensor / LayerOutput::nhwc.
  virtual bool supports_nhwc() const { return false; }
  // True when output 0 is input 0's memory reinterpreted (Reshape, Flatten, Squeeze ...): no kernel runs.
  virtual bool is_alias() const { return false; }
  // Enqueues the node on launch.stream. Throws kilnrt::Error naming the node on failure.
  virtual void enqueue(LayerLaunch& launch) = 0;
};

struct LayerCreateArgs {
  const ir::Node& node;
  const ir::Graph& graph;
  int64_t opset;
  DeviceWeights& weights;
  int device;
};

using LayerFactory = std::function<std::unique_ptr<CudaLayer>(const LayerCreateArgs&)>;
// Returns "" when the node is supported, else the reason (dtype, attribute, rank ...).
using LayerSupports = std::function<std::string(const ir::Node&, const ir::Graph&)>;

struct LayerEntry {
  std::string domain;  // "" = ai.onnx ("ai.onnx" is stored as "")
  std::string op_type;
  LayerSupports supports;
  LayerFactory create;
  std::string source;  // the registering file, relative to src/ ("ops/nn/normalization/cuda/layer_norm_layer.cc")
};

// The CUDA layers, keyed by (domain, op type). A second registration of a key is an error: the registry keeps the
// first, records the clash, and every lookup then throws naming both files (tests check there is none).
class LayerRegistry {
 public:
  static LayerRegistry& instance();
  void add(LayerEntry entry);
  // The entry of (domain, op_type), nullptr when none. Throws kInternal when two files registered one key.
  const LayerEntry* find(const std::string& domain, const std::string& op_type) const;
  std::vector<const LayerEntry*> all() const;
  // "" when every key was registered once, else the clashes, one per line.
  std::string conflicts() const;

 private:
  std::map<std::pair<std::string, std::string>, LayerEntry> entries_;
  std::string conflicts_;
};

// Registers one layer for each name of `ops`: "OpType" (domain ai.onnx) or "domain:OpType"
// ("com.kilnrt:FusedMatMul"). `file` is the registering source file (__FILE__, through the macro below).
struct LayerRegistrar {
  LayerRegistrar(const char* file, std::initializer_list<const char*> ops, LayerSupports supports, LayerFactory create);
};

// Custom ops (include/kilnrt/custom_op.h) share one entry, registered under this key (domain kCustomLayerDomain).
constexpr const char* kCustomLayerDomain = "kilnrt.custom";
constexpr const char* kCustomLayerKey = "kilnrt.custom:custom_op";
// The entry that runs `node`: the custom-op entry when node's domain/op_type is a registered custom op, else the
// entry of (node.domain, node.op_type) (nullptr when none).
const LayerEntry* find_layer(const ir::Node& node, const ir::Graph& graph);
#define KILNRT_CUDA_CONCAT2(a, b) a##b
#define KILNRT_CUDA_CONCAT(a, b) KILNRT_CUDA_CONCAT2(a, b)
// The one way to register CUDA layers:
//   KILNRT_REGISTER_CUDA_LAYER({"Relu", "Sigmoid"}, supports_fn, factory_fn);
//   KILNRT_REGISTER_CUDA_LAYER({"com.kilnrt:FusedMatMul"}, supports_fn, factory_fn);
// supports_fn may be nullptr (every node of the op type is supported).
#define KILNRT_REGISTER_CUDA_LAYER(...)                                                                      \
  static const ::kilnrt::backends::cuda::LayerRegistrar KILNRT_CUDA_CONCAT(kilnrt_cuda_layer_, __COUNTER__)( \
      __FILE__, __VA_ARGS__)

// Arithmetic precision of a layer, chosen at build (--fp16 / --bf16 / --tf32) and stored with the node as the
// string attribute kPrecisionAttr ("fp32" when absent). fp16 / bf16: 16-bit operands with float32 accumulation;
// tf32: float32 data, TF32 tensor-core math allowed.
enum class Precision { kFp32, kTf32, kFp16, kBf16 };
constexpr const char* kPrecisionAttr = "kilnrt_precision";
Precision node_precision(const ir::Node& node);
const char* precision_name(Precision p);  // "fp32", "tf32", "fp16", "bf16"

// Whether `node` can run on the CUDA backend: "" if yes, else why not (unknown op, dtype ...).
std::string cuda_supports(const ir::Node& node, const ir::Graph& graph);

// Throws kCuda naming the node when a kernel launcher returned a non-zero status.
void check_launch(int status, const std::string& node, const char* kernel);

// Helpers shared by layers.
kilnrt::cuda::kernels::Broadcast3 make_broadcast(const Shape& out, const std::vector<Shape>& ins);
int kernel_dtype_code(DType t);  // 0 f32, 1 i64, 2 i32, 3 bool, 4 f16, 5 bf16, -1 other
int float_code(DType t);         // storage code of the float kernels: 0 f32, 1 f16, 2 bf16, -1 other
int cast_dtype_code(DType t);    // codes of kernels::cast, -1 other
// The dtype of a value in the graph (kUndefined when unknown).
DType value_dtype(const ir::Graph& g, const std::string& name);
// Whether `t` is one of `ok` (layers' supports() checks).
inline bool dtype_is_one_of(DType t, std::initializer_list<DType> ok) {
  for (DType o : ok)
    if (t == o) return true;
  return false;
}

}  // namespace kilnrt::backends::cuda
