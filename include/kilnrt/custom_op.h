// Custom operators: ops of your own ONNX domain ("my.domain", "ScaledTanh") that kilnrt builds and runs like its
// built-in ones, on the CPU and on CUDA.
//
//   kilnrt::CustomOp op;
//   op.domain = "my.domain";
//   op.name = "ScaledTanh";
//   op.shape = nullptr;                       // default: one output shaped and typed like input 0
//   op.cpu = [](kilnrt::CustomCpuContext& c) {
//     const float a = c.node.attr_float("alpha", 1.f);
//     const kilnrt::Tensor& x = *c.inputs[0];
//     kilnrt::Tensor y = kilnrt::Tensor::empty(x.dtype(), x.shape());
//     for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = a * std::tanh(x.data<float>()[i]);
//     c.outputs[0] = y;
//   };
//   op.cuda = [](kilnrt::CustomCudaContext& c) {       // device pointers, shapes, dtypes, the caller's stream
//     launch_scaled_tanh(c.inputs[0].data, c.outputs[0].data, c.outputs[0].numel(), c.stream);
//   };
//   kilnrt::register_custom_op(op);           // or: static kilnrt::CustomOpRegistrar reg(op);
//
// Register before building or loading an engine that uses the op. Engine files record the op by domain and name,
// not its code: loading such an engine in a process where the op is not registered is a kilnrt::Error naming it.
//
// Threads: the registry is thread-safe; an op stays registered for the life of the process (registering the same
// domain/name/opset range twice is an error). The callbacks may run on any thread, concurrently for different
// execution contexts: make them reentrant.
//
// CUDA: `cuda` runs inside kilnrt's context guard with the engine device's primary context current. It must only
// enqueue work on `stream` (kernel launches, cudaMemsetAsync / cudaMemcpyAsync between device buffers): no
// synchronisation, no allocation, no host reads of device data. kilnrt may capture it into a CUDA graph and replay
// the graph later without calling it again, so the same shapes must always enqueue the same work on the same
// pointers' roles (kilnrt keeps I/O addresses stable across replays). `cuda_prepare` runs once per engine and device
// when the engine is loaded (outside any capture): compile or load kernels there.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kilnrt/dtype.h"
#include "kilnrt/tensor.h"

namespace kilnrt {

// Read-only view of the node being run: its name and attributes.
class CustomOpNode {
 public:
  explicit CustomOpNode(const void* node) : node_(node) {}
  const std::string& name() const;
  const std::string& domain() const;
  const std::string& op_type() const;
  size_t num_inputs() const;  // as written in the model, omitted optional inputs included
  size_t num_outputs() const;
  bool has_attr(const std::string& key) const;
  // Typed attribute reads; a missing attribute returns the default, a wrong kind throws naming the node.
  int64_t attr_int(const std::string& key, int64_t def = 0) const;
  float attr_float(const std::string& key, float def = 0.f) const;
  std::string attr_string(const std::string& key, const std::string& def = {}) const;
  std::vector<int64_t> attr_ints(const std::string& key) const;
  std::vector<float> attr_floats(const std::string& key) const;
  std::vector<std::string> attr_strings(const std::string& key) const;
  // All attribute names, and the kind of one: "int", "float", "string", "ints", "floats", "strings", "tensor",
  // "graph" ("" when absent).
  std::vector<std::string> attr_names() const;
  std::string attr_kind(const std::string& key) const;

 private:
  const void* node_;  // the ir::Node
};

// A tensor's type during shape inference: dims are -1 where unknown (dynamic) at build time.
struct CustomTensorType {
  DType dtype = DType::kUndefined;
  Shape shape;            // rank and dims; -1 = unknown dim
  bool has_shape = true;  // false: rank unknown
  bool present = true;    // false: omitted optional input
};

struct CustomShapeContext {
  CustomOpNode node;
  int64_t opset = 0;
  std::vector<CustomTensorType> inputs;
  std::vector<const Tensor*> values;      // constant (or host-computed) value of each input, else nullptr
  std::vector<CustomTensorType> outputs;  // to fill, one per node output (pre-sized)
};
// Infers output dtypes and shapes. It runs at build time (dims may be -1) and again with concrete input shapes
// whenever a dynamic engine sees new shapes. An output dim list equal to an input's dims keeps that input's symbolic
// dims (so "same shape as input 0" stays dynamic). Throw kilnrt::Error for bad inputs.
using CustomShapeFn = std::function<void(CustomShapeContext&)>;

struct CustomCpuContext {
  CustomOpNode node;
  int64_t opset = 0;
  std::vector<const Tensor*> inputs;  // host tensors; nullptr for an omitted optional input
  std::vector<Tensor> outputs;        // to fill (Tensor::empty ...), one per node output; omitted ones may stay empty
};
using CustomCpuFn = std::function<void(CustomCpuContext&)>;

struct CustomDeviceTensor {
  const void* data = nullptr;  // device pointer; null for an omitted input or a 0-element tensor
  DType dtype = DType::kUndefined;
  Shape shape;
  bool present = false;
  int64_t numel() const { return shape_numel(shape); }
};
struct CustomDeviceOutput {
  void* data = nullptr;  // device memory of numel() * dtype_size(dtype) bytes, allocated by kilnrt
  DType dtype = DType::kUndefined;
  Shape shape;  // from the shape function, for the current input shapes
  bool present = false;
  int64_t numel() const { return shape_numel(shape); }
};

struct CustomCudaContext {
  CustomOpNode node;
  int64_t opset = 0;
  int device = 0;          // CUDA device ordinal
  void* stream = nullptr;  // cudaStream_t / CUstream to enqueue on
  std::vector<CustomDeviceTensor> inputs;
  std::vector<CustomDeviceOutput> outputs;
};
using CustomCudaFn = std::function<void(CustomCudaContext&)>;

struct CustomOp {
  std::string domain;     // ONNX domain, e.g. "my.domain" (not "" / "ai.onnx": those are ONNX's own ops)
  std::string name;       // op_type, e.g. "ScaledTanh"
  int since_version = 1;  // opset range of `domain` this implementation covers (inclusive)
  int until_version = 1000;
  CustomShapeFn shape;  // null: one output with input 0's dtype and shape
  CustomCpuFn cpu;      // required: the reference implementation (CPU engines, constant folding)
  CustomCudaFn cuda;    // optional: without it, CUDA engines using the op fail to build, naming the node
  std::function<void(int device)> cuda_prepare;  // optional: called once per engine load on `device`
  std::vector<DType> dtypes;                     // documentation: dtypes of input 0 the CPU function handles
  std::string doc;                               // one line, shown by `kilnrt ops`
};

// Registers `op`. Throws kInvalidArgument when the domain is ONNX's, a field is missing, or the same
// domain/name/opset range is registered already.
void register_custom_op(CustomOp op);
// Whether domain/name is registered (at any opset).
bool is_custom_op_registered(const std::string& domain, const std::string& name);
// "domain:name" of every registered custom op.
std::vector<std::string> registered_custom_ops();

// For static registration: `static kilnrt::CustomOpRegistrar my_op(make_my_op());`.
struct CustomOpRegistrar {
  explicit CustomOpRegistrar(CustomOp op) { register_custom_op(std::move(op)); }
};

// A CUDA implementation from CUDA C source compiled with NVRTC (kilnrt::cuda::Kernel, with its on-disk cache). The
// kernel `kernel_name` (extern "C") takes one pointer per present input, then one per output, then `long long n`
// (the element count of output 0), then the launch function's `args` (long long each), then one `float` per entry of
// `float_attrs` (the node's attribute of that name, else the given default). `launch` maps the input and output
// shapes to {grid.x, block.x, shared bytes, args}; null =
// the elementwise convention: 256 threads per block, ceil(n / 256) blocks, nothing launched when n == 0. Put
// `prepare` and `cuda` into CustomOp::cuda_prepare / CustomOp::cuda: the kernel is compiled (or read from the cache)
// once per device when an engine is loaded. CPU-only builds throw kUnsupported when they would compile.
struct NvrtcCustomKernel {
  CustomCudaFn cuda;
  std::function<void(int device)> prepare;
};
struct CustomLaunchDims {
  unsigned grid = 1, block = 256, shared_bytes = 0;
  std::vector<long long> args;  // extra `long long` kernel arguments, passed after n (before the float attributes)
};
using CustomLaunchFn =
    std::function<CustomLaunchDims(const std::vector<Shape>& input_shapes, const std::vector<Shape>& output_shapes)>;
NvrtcCustomKernel nvrtc_custom_kernel(const std::string& source, const std::string& kernel_name,
                                      CustomLaunchFn launch = nullptr,
                                      std::vector<std::pair<std::string, float>> float_attrs = {},
                                      std::vector<std::string> nvrtc_options = {});

}  // namespace kilnrt
