// The CUDA layer of custom ops (include/kilnrt/custom_op.h): one entry (kCustomLayerKey) for every registered op
// with a CUDA implementation. The layer hands the op's function device pointers, shapes, dtypes and the launch's
// stream; it allocates nothing and never synchronises, so it is captured into CUDA graphs like any other layer.
// Also: nvrtc_custom_kernel, CUDA implementations from CUDA C source through kilnrt::cuda::Kernel (NVRTC + cache).
#include <map>
#include <mutex>

#include "ops/cuda/cuda_layer.h"
#include "kilnrt/cuda/kernel.h"
#include "ops/custom/custom_registry.h"

namespace kilnrt {
namespace backends::cuda {
namespace {

class CustomLayer final : public CudaLayer {
 public:
  CustomLayer(const ir::Node& node, const CustomOp& op, int64_t opset, int device)
      : node_(node), op_(op), opset_(opset), device_(device), name_(node.describe()) {
    if (op_.cuda_prepare) {
      try {
        op_.cuda_prepare(device);
      } catch (const Error& e) {
        throw e.with_context(name_);
      } catch (const std::exception& e) {
        KILNRT_THROW(kInvalidArgument, name_, "custom op CUDA prepare failed: " << e.what());
      }
    }
  }
  std::string tactic() const override { return "custom:" + ops::custom::qualified_name(op_.domain, op_.name); }
  void enqueue(LayerLaunch& l) override {
    CustomCudaContext c{CustomOpNode(&node_), opset_, device_, static_cast<void*>(l.stream), {}, {}};
    for (const LayerTensor& t : l.inputs) c.inputs.push_back(CustomDeviceTensor{t.data, t.dtype, t.shape, t.present});
    for (const LayerOutput& o : l.outputs) c.outputs.push_back(CustomDeviceOutput{o.data, o.dtype, o.shape, o.present});
    try {
      op_.cuda(c);
    } catch (const Error& e) {
      if (e.where().find(node_.name) != std::string::npos) throw;
      throw e.with_context(name_);
    } catch (const std::exception& e) {
      KILNRT_THROW(kCuda, name_, "custom op CUDA function failed: " << e.what());
    }
  }

 private:
  const ir::Node& node_;
  const CustomOp& op_;  // registry entries live for the life of the process
  int64_t opset_;
  int device_;
  std::string name_;
};

const CustomOp* custom_for(const ir::Node& n, const ir::Graph& g) {
  return ops::custom::find_custom_op(n.domain, n.op_type, g.opset(n.domain));
}

KILNRT_REGISTER_CUDA_LAYER(
    {kCustomLayerKey},
    [](const ir::Node& n, const ir::Graph& g) -> std::string {
      const CustomOp* op = custom_for(n, g);
      if (!op) return "custom op " + ops::custom::qualified_name(n.domain, n.op_type) + " is not registered";
      if (!op->cuda)
        return "custom op " + ops::custom::qualified_name(n.domain, n.op_type) +
               " was registered without a CUDA implementation";
      return "";
    },
    [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
      const CustomOp* op = custom_for(a.node, a.graph);
      KILNRT_CHECK(op && op->cuda, kUnsupported, a.node.describe(), "custom op has no CUDA implementation");
      return std::make_unique<CustomLayer>(a.node, *op, a.opset, a.device);
    });

}  // namespace
}  // namespace backends::cuda

// ---- CUDA C source -> custom op CUDA implementation ----------------------------------------------------------------
namespace {

struct NvrtcKernelState {
  std::string source, name;
  CustomLaunchFn launch;
  std::vector<std::pair<std::string, float>> float_attrs;
  kilnrt::cuda::KernelCompileOptions options;
  std::mutex mutex;
  std::map<int, kilnrt::cuda::Kernel> kernels;  // per device

  const kilnrt::cuda::Kernel& get(int device) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = kernels.find(device);
    if (it == kernels.end())
      it = kernels.emplace(device, kilnrt::cuda::Kernel::compile(device, source, name, options)).first;
    return it->second;
  }
};

}  // namespace

NvrtcCustomKernel nvrtc_custom_kernel(const std::string& source, const std::string& kernel_name, CustomLaunchFn launch,
                                      std::vector<std::pair<std::string, float>> float_attrs,
                                      std::vector<std::string> nvrtc_options) {
  auto st = std::make_shared<NvrtcKernelState>();
  st->float_attrs = std::move(float_attrs);
  st->source = source;
  st->name = kernel_name;
  st->launch = std::move(launch);
  st->options.nvrtc_options = std::move(nvrtc_options);
  st->options.program_name = kernel_name + ".cu";
  NvrtcCustomKernel k;
  // Compiling at engine load keeps NVRTC (and module loading, which may synchronise) out of enqueue and captures.
  k.prepare = [st](int device) { st->get(device); };
  k.cuda = [st](CustomCudaContext& c) {
    const kilnrt::cuda::Kernel& kernel = st->get(c.device);
    std::vector<Shape> in_shapes, out_shapes;
    std::vector<const void*> ptrs;
    for (const CustomDeviceTensor& t : c.inputs) {
      in_shapes.push_back(t.shape);
      if (t.present) ptrs.push_back(t.data);
    }
    for (const CustomDeviceOutput& o : c.outputs) {
      out_shapes.push_back(o.shape);
      ptrs.push_back(o.data);
    }
    long long n = c.outputs.empty() ? 0 : static_cast<long long>(c.outputs[0].numel());
    CustomLaunchDims dims;
    if (st->launch) {
      dims = st->launch(in_shapes, out_shapes);
    } else {
      if (n == 0) return;  // elementwise over nothing
      dims.block = 256;
      dims.grid = static_cast<unsigned>((n + 255) / 256);
    }
    KILNRT_CHECK(dims.grid >= 1 && dims.block >= 1 && dims.block <= 1024, kInvalidArgument, "kernel " + st->name,
                 "launch dims grid " << dims.grid << " block " << dims.block << " are out of range");
    std::vector<float> scalars;
    for (const auto& [key, def] : st->float_attrs) scalars.push_back(c.node.attr_float(key, def));
    std::vector<void*> params;
    for (const void*& p : ptrs) params.push_back(static_cast<void*>(&p));
    params.push_back(&n);
    for (long long& a : dims.args) params.push_back(&a);
    for (float& f : scalars) params.push_back(&f);
    params.push_back(nullptr);
    kernel.launch_raw({dims.grid}, {dims.block}, dims.shared_bytes, static_cast<kilnrt::cuda::StreamHandle>(c.stream),
                      params.data());
  };
  return k;
}

}  // namespace kilnrt
