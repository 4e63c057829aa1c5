// Helpers for the CUDA backend tests: run a one-node graph (OneNode: inputs as graph inputs or constants, any domain)
// on the CPU reference and on the CUDA backend (CudaPlan + CudaRunner on a private stream) and compare
// (expect_tensors_close: any dtype, NaN-aware; integers bit for bit on request), check where the plan placed each
// step (expect_cuda_placement), and the same for fp16 / bf16 engines (compare16_on_cuda).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "backends/cuda/cuda_plan.h"
#include "cuda/context_guard.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/doctor.h"
#include "ops/common/double_io.h"
#include "passes/shape_inference.h"

namespace kilnrt::cudatest {

#define KILNRT_SKIP_WITHOUT_GPU()                                                         \
  do {                                                                                    \
    std::string why_;                                                                     \
    if (!::kilnrt::cuda_available(&why_)) GTEST_SKIP() << "no usable CUDA GPU: " << why_; \
  } while (0)

// Sets an environment variable (unsets it for a null value) for the scope, then restores what was there: the
// KILNRT_* switches tests flip.
struct ScopedEnv {
  std::string name, old;
  bool had = false;
  ScopedEnv(const char* n, const char* v) : name(n) {
    if (const char* o = std::getenv(n)) {
      had = true;
      old = o;
    }
    if (v)
      ::setenv(n, v, 1);
    else
      ::unsetenv(n);
  }
  ~ScopedEnv() {
    if (had)
      ::setenv(name.c_str(), old.c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

// A one-node graph: the node's inputs become graph inputs (their feeds), or graph constants where `constant[i]`;
// empty input names are omitted inputs. The node's domain is at `opset`; a node of another domain gets ai.onnx at
// `onnx_opset` beside it.
struct OneNode {
  ir::Graph g;
  std::map<std::string, Tensor> feeds;
  OneNode(const ir::Node& node, const std::vector<Tensor>& inputs, const std::vector<bool>& constant = {},
          int64_t opset = 17, int64_t onnx_opset = 17) {
    g.name = "one";
    g.opsets[""] = node.domain.empty() ? opset : onnx_opset;
    if (!node.domain.empty()) g.opsets[node.domain] = opset;
    g.nodes.push_back(node);
    for (size_t i = 0; i < inputs.size() && i < node.inputs.size(); ++i) {
      const std::string& name = node.inputs[i];
      if (name.empty()) continue;
      if (i < constant.size() && constant[i]) {
        g.constants[name] = inputs[i];
      } else {
        g.inputs.push_back(name);
        ir::TensorType t;
        t.dtype = inputs[i].dtype();
        t.has_shape = true;
        t.shape = ir::shape_to_sym(inputs[i].shape());
        g.types[name] = t;
        feeds[name] = inputs[i];
      }
    }
    for (const std::string& o : node.outputs)
      if (!o.empty()) g.outputs.push_back(o);
    passes::infer_shapes(g);
  }
};

inline std::map<std::string, Tensor> run_cpu(const ir::Graph& g, const std::map<std::string, Tensor>& feeds) {
  backends::cpu::CpuPlan plan(g);
  return plan.run(feeds);
}

// One plan and runner on a private stream, kept across runs (the runner's pools, segment and control-flow state live
// in it): for tests that run a graph several times or look at the plan / runner between runs.
struct CudaSession {
  const ir::Graph& g;
  kilnrt::cuda::ContextGuard guard{0};
  backends::cuda::CudaPlan plan;
  backends::cuda::CudaRunner runner;
  kilnrt::cuda::Stream stream{0};
  explicit CudaSession(const ir::Graph& graph) : g(graph), plan(graph, 0), runner(plan) {}

  // Copies `feeds` (every graph input) to the device, runs, and copies every graph output back.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds) {
    std::vector<Shape> shapes;
    for (const std::string& in : g.inputs) shapes.push_back(feeds.at(in).shape());
    runner.prepare(shapes, stream.get());
    std::vector<kilnrt::cuda::DeviceBuffer> ins;
    std::vector<const void*> ptrs;
    for (const std::string& in : g.inputs) {
      const Tensor& t = feeds.at(in);
      ins.emplace_back(0, std::max<size_t>(t.nbytes(), 1));
      if (t.nbytes()) ins.back().copy_from_host_async(t.raw(), t.nbytes(), stream.get());
      ptrs.push_back(ins.back().data());
    }
    runner.enqueue(ptrs, std::vector<void*>(g.outputs.size(), nullptr), stream.get());
    const std::vector<Shape> out_shapes = runner.output_shapes();
    std::map<std::string, Tensor> out;
    const auto& api = guard.api();
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      Tensor t = Tensor::empty(g.type_of(g.outputs[i])->dtype, out_shapes[i]);
      if (t.nbytes())
        KILNRT_CU_CHECK(api,
                        api.MemcpyDtoHAsync(t.raw(), reinterpret_cast<CUdeviceptr>(runner.output_device_ptr(i)),
                                            t.nbytes(), stream.get()),
                        "test");
      out[g.outputs[i]] = t;
    }
    stream.synchronize();
    return out;
  }
};

// One run of `g` on a fresh plan and runner.
inline std::map<std::string, Tensor> run_cuda(const ir::Graph& g, const std::map<std::string, Tensor>& feeds) {
  CudaSession session(g);
  return session.run(feeds);
}

// How integer and bool tensors are compared: as values within the tolerance, or bit for bit.
enum class IntCompare { kAsValues, kBitExact };

// Same dtype and shape; every value read as a double (ops::tensor_to_doubles: any float or integer dtype; bool as its
// byte): NaN where the reference has NaN, else |a - b| <= atol + rtol * |b|. With IntCompare::kBitExact, integer and
// bool tensors must match byte for byte instead. The first 5 mismatches are reported.
inline void expect_tensors_close(const Tensor& got, const Tensor& want, double atol = 1e-5, double rtol = 1e-5,
                                 IntCompare ints = IntCompare::kAsValues) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  const DType dt = want.dtype();
  const bool is_float =
      dt == DType::kFloat32 || dt == DType::kFloat64 || dt == DType::kFloat16 || dt == DType::kBFloat16;
  int failures = 0;
  if (!is_float && ints == IntCompare::kBitExact) {
    const size_t es = dtype_size(dt);
    for (int64_t i = 0; i < want.numel() && failures < 5; ++i) {
      uint64_t a = 0, b = 0;
      std::memcpy(&a, static_cast<const char*>(got.raw()) + i * es, es);
      std::memcpy(&b, static_cast<const char*>(want.raw()) + i * es, es);
      if (a != b) {
        ++failures;
        ADD_FAILURE() << "element " << i << ": got bits 0x" << std::hex << a << ", want 0x" << b << std::dec;
      }
    }
    return;
  }
  const auto doubles = [](const Tensor& t) {
    if (t.dtype() != DType::kBool) return ops::tensor_to_doubles(t, ir::Node{});
    std::vector<double> v(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = t.data<uint8_t>()[i];
    return v;
  };
  const std::vector<double> a = doubles(got), b = doubles(want);
  for (size_t i = 0; i < b.size() && failures < 5; ++i) {
    const bool ok =
        std::isnan(b[i]) ? std::isnan(a[i]) : (a[i] == b[i] || std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i]));
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "element " << i << ": got " << a[i] << ", want " << b[i];
    }
  }
}

// Where the steps of a CUDA plan may run: on the GPU only (a "cuda:" tactic), or also as host shape computations
// (Shape / Size and nodes of host values: "host:shape...") — never as a CPU fallback.
enum class Placement { kNotChecked, kGpuOrHostShape, kGpuOnly };

inline void expect_cuda_placement(const ir::Graph& g, Placement placement = Placement::kGpuOrHostShape) {
  kilnrt::cuda::ContextGuard guard(0);
  backends::cuda::CudaPlan plan(g, 0);
  for (const auto& [node, tactic] : plan.tactics()) {
    const bool on_gpu = tactic.rfind("cuda:", 0) == 0;
    const bool shape_computation = placement == Placement::kGpuOrHostShape && tactic.rfind("host:shape", 0) == 0;
    EXPECT_TRUE(on_gpu || shape_computation) << node << " has tactic " << tactic;
  }
}

// What compare_on_cuda checks besides the values: ai.onnx's opset beside a node of another domain (OneNode), the
// placement of the CUDA plan, how integer outputs compare.
struct CudaCheck {
  int64_t onnx_opset = 17;
  Placement placement = Placement::kGpuOrHostShape;
  IntCompare ints = IntCompare::kAsValues;
};

// Runs `node` (a OneNode graph) on the CPU reference and on CUDA, compares every output within atol + rtol * |want|
// and checks the placement. Returns the CUDA outputs.
inline std::map<std::string, Tensor> compare_on_cuda(const ir::Node& node, const std::vector<Tensor>& inputs,
                                                     const std::vector<bool>& constant, int64_t opset,
                                                     double atol = 1e-6, double rtol = 1e-5,
                                                     const CudaCheck& check = {}) {
  OneNode one(node, inputs, constant, opset, check.onnx_opset);
  const auto want = run_cpu(one.g, one.feeds);
  const auto got = run_cuda(one.g, one.feeds);
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) {
    SCOPED_TRACE(node.op_type + " output " + name);
    expect_tensors_close(got.at(name), t, atol, rtol, check.ints);
  }
  if (check.placement != Placement::kNotChecked) expect_cuda_placement(one.g, check.placement);
  return got;
}

// ---- 16-bit engines -----------------------------------------------------------------------------------------------
struct Precision16 {
  const char* name;  // the kilnrt_precision attribute's value
  DType dt;
  double u;  // unit roundoff
};
inline const Precision16 kPrecisions16[] = {{"fp16", DType::kFloat16, 1.0 / 2048},
                                            {"bf16", DType::kBFloat16, 1.0 / 256}};

// A float32 tensor with its values rounded to the 16-bit type `dt` (still float32); other tensors unchanged.
inline Tensor rounded_to_16bit(const Tensor& t, DType dt) {
  if (t.dtype() != DType::kFloat32) return t;
  Tensor r = Tensor::from_data(t.raw(), t.dtype(), t.shape());
  for (int64_t i = 0; i < r.numel(); ++i) {
    const float v = r.data<float>()[i];
    r.data<float>()[i] =
        dt == DType::kFloat16 ? half_to_float(float_to_half(v)) : bfloat16_to_float(float_to_bfloat16(v));
  }
  return r;
}

// Every node of `g` at precision `name` ("fp16", "bf16", ...), as a 16-bit engine build sets it.
inline void set_graph_precision(ir::Graph& g, const char* name) {
  for (ir::Node& n : g.nodes) {
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kString;
    a.s = name;
    n.attrs[backends::cuda::kPrecisionAttr] = a;
  }
}

// The node as an fp16 and a bf16 engine builds it (the kilnrt_precision attribute), float32 inputs pre-rounded to the
// 16-bit type; compared with the float32 CPU reference on the same inputs: |got - want| <= 16u * (scale + |want|).
inline void compare16_on_cuda(const ir::Node& node, const std::vector<Tensor>& inputs,
                              const std::vector<bool>& constant, int64_t opset, double scale,
                              const CudaCheck& check = {}) {
  for (const Precision16& p : kPrecisions16) {
    SCOPED_TRACE(p.name);
    ir::Node n = node;
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::kString;
    a.s = p.name;
    n.attrs[backends::cuda::kPrecisionAttr] = a;
    std::vector<Tensor> ins;
    for (const Tensor& t : inputs) ins.push_back(rounded_to_16bit(t, p.dt));
    compare_on_cuda(n, ins, constant, opset, 16 * p.u * scale, 16 * p.u, check);
  }
}

// Runs `node` on both backends and compares every output.
inline void compare_node(const ir::Node& node, const std::vector<Tensor>& inputs,
                         const std::vector<bool>& constant = {}, int64_t opset = 17, double atol = 1e-5,
                         double rtol = 1e-5) {
  OneNode one(node, inputs, constant, opset);
  const auto want = run_cpu(one.g, one.feeds);
  const auto got = run_cuda(one.g, one.feeds);
  for (const auto& [name, t] : want) {
    SCOPED_TRACE(node.op_type + " output " + name);
    expect_tensors_close(got.at(name), t, atol, rtol);
  }
}

}  // namespace kilnrt::cudatest
