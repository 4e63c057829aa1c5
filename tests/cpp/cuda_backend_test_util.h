// Helpers for the CUDA backend tests: run a one-node graph on the CPU reference and on the CUDA backend (CudaPlan +
// CudaRunner on a private stream) and compare.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "backends/cuda/cuda_plan.h"
#include "cuda/context_guard.h"
#include "kilnrt/cuda/memory.h"
#include "kilnrt/cuda/stream.h"
#include "kilnrt/doctor.h"
#include "passes/shape_inference.h"

namespace kilnrt::cudatest {

#define KILNRT_SKIP_WITHOUT_GPU()                                              \
  do {                                                                         \
    std::string why_;                                                          \
    if (!::kilnrt::cuda_available(&why_)) GTEST_SKIP() << "no usable CUDA GPU: " << why_; \
  } while (0)

// A one-node graph: inputs in0..inN-1 (graph inputs unless given as constants), outputs out0..
struct OneNode {
  ir::Graph g;
  std::map<std::string, Tensor> feeds;
  OneNode(const ir::Node& node, const std::vector<Tensor>& inputs, const std::vector<bool>& constant = {},
          int64_t opset = 17) {
    g.name = "one";
    g.opsets[""] = opset;
    g.nodes.push_back(node);
    for (size_t i = 0; i < inputs.size(); ++i) {
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

inline std::map<std::string, Tensor> run_cuda(const ir::Graph& g, const std::map<std::string, Tensor>& feeds) {
  const int dev = 0;
  kilnrt::cuda::ContextGuard guard(dev);
  backends::cuda::CudaPlan plan(g, dev);
  backends::cuda::CudaRunner runner(plan);
  kilnrt::cuda::Stream stream(dev);
  std::vector<Shape> shapes;
  for (const std::string& in : g.inputs) shapes.push_back(feeds.at(in).shape());
  runner.prepare(shapes, stream.get());
  std::vector<kilnrt::cuda::DeviceBuffer> ins;
  std::vector<const void*> ptrs;
  for (const std::string& in : g.inputs) {
    const Tensor& t = feeds.at(in);
    ins.emplace_back(dev, std::max<size_t>(t.nbytes(), 1));
    if (t.nbytes()) ins.back().copy_from_host_async(t.raw(), t.nbytes(), stream.get());
    ptrs.push_back(ins.back().data());
  }
  runner.enqueue(ptrs, std::vector<void*>(g.outputs.size(), nullptr), stream.get());
  const std::vector<Shape> out_shapes = runner.output_shapes();
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    Tensor t = Tensor::empty(g.type_of(g.outputs[i])->dtype, out_shapes[i]);
    if (t.nbytes()) {
      const auto& api = guard.api();
      KILNRT_CU_CHECK(api, api.MemcpyDtoHAsync(t.raw(), reinterpret_cast<CUdeviceptr>(runner.output_device_ptr(i)),
                                               t.nbytes(), stream.get()),
                      "test");
    }
    out[g.outputs[i]] = t;
  }
  stream.synchronize();
  return out;
}

// Compares element by element: NaN where the reference has NaN, else |a-b| <= atol + rtol*|b|.
inline void expect_tensors_close(const Tensor& got, const Tensor& want, double atol = 1e-5, double rtol = 1e-5) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  const int64_t n = want.numel();
  int failures = 0;
  for (int64_t i = 0; i < n && failures < 5; ++i) {
    double a, b;
    switch (want.dtype()) {
      case DType::kFloat32: a = got.data<float>()[i]; b = want.data<float>()[i]; break;
      case DType::kInt64: a = double(got.data<int64_t>()[i]); b = double(want.data<int64_t>()[i]); break;
      case DType::kInt32: a = got.data<int32_t>()[i]; b = want.data<int32_t>()[i]; break;
      case DType::kBool: case DType::kUInt8: a = got.data<uint8_t>()[i]; b = want.data<uint8_t>()[i]; break;
      default: FAIL() << "dtype " << dtype_name(want.dtype());
    }
    const bool ok = std::isnan(b) ? std::isnan(a) : (std::fabs(a - b) <= atol + rtol * std::fabs(b) || a == b);
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "element " << i << ": got " << a << ", want " << b;
    }
  }
}

// Runs `node` on both backends and compares every output.
inline void compare_node(const ir::Node& node, const std::vector<Tensor>& inputs, const std::vector<bool>& constant = {},
                         int64_t opset = 17, double atol = 1e-5, double rtol = 1e-5) {
  OneNode one(node, inputs, constant, opset);
  const auto want = run_cpu(one.g, one.feeds);
  const auto got = run_cuda(one.g, one.feeds);
  for (const auto& [name, t] : want) {
    SCOPED_TRACE(node.op_type + " output " + name);
    expect_tensors_close(got.at(name), t, atol, rtol);
  }
}

}  // namespace kilnrt::cudatest
