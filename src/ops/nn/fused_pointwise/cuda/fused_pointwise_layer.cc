// com.kilnrt:FusedPointwise on CUDA: one generated kernel per fused chain of pointwise ops
// (fused_pointwise_codegen.h). The builder compiles it with NVRTC and stores the image in the node
// (fused_pointwise_code.h); at engine load the layer loads that image into the device's primary context under the
// context guard (cuModuleLoadData / cuModuleGetFunction) — no NVRTC. When the stored image does not load (another
// GPU, another driver, damage) or the node carries none, the kernel is regenerated from the node's program and
// recompiled, with a warning saying why.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <thread>
#include <cstring>
#include <memory>

#include "ops/cuda/cuda_layer.h"
#include "ops/nn/fused_pointwise/cuda/fused_pointwise_code.h"
#include "ops/nn/fused_pointwise/cuda/fused_pointwise_codegen.h"
#include "core/logging.h"
#include "cuda/context_guard.h"
#include "cuda/nvrtc_compiler.h"
#include "kilnrt/cuda/kernel.h"
#include "ops/nn/fused_attention/fused_attention.h"
#include "ops/nn/fused_pointwise/fused_pointwise.h"

namespace kilnrt::backends::cuda {
namespace {

using kilnrt::cuda::CompiledCode;
using ops::nn::PwProgram;

std::vector<bool> bool_inputs(const ir::Node& n, const ir::Graph& g) {
  std::vector<bool> b;
  for (const std::string& in : n.inputs) b.push_back(value_dtype(g, in) == DType::kBool);
  return b;
}

std::shared_ptr<const CompiledCode> compile_node(const ir::Node& n, const ir::Graph& g, int device) {
  const PwProgram p = ops::nn::read_pointwise_program(n);
  const std::string source = fused_pointwise_source(p, bool_inputs(n, g));
  const kilnrt::cuda::NvrtcApi& nv = kilnrt::cuda::nvrtc_api();
  const kilnrt::cuda::CompileTarget target =
      kilnrt::cuda::choose_target(kilnrt::cuda::device_compute_capability(device), nv.supported_archs, nv.version);
  kilnrt::cuda::KernelCompileOptions options;
  options.program_name = "fused_pointwise.cu";
  try {
    return kilnrt::cuda::compile_cuda(source, fused_pointwise_kernel_names(), target, options);
  } catch (const Error& e) {
    throw e.with_context(n.describe());
  }
}

// The code stored in the node by embed_fused_pointwise_code, or nullptr when it carries none.
std::shared_ptr<const CompiledCode> stored_code(const ir::Node& n) {
  if (!n.has_attr(kPwCodeAttr)) return nullptr;
  auto c = std::make_shared<CompiledCode>();
  c->image = n.attr_string(kPwCodeAttr);
  c->kind = n.attr_int(kPwCodeKindAttr, 1) == 2 ? CompiledCode::Kind::kPtx : CompiledCode::Kind::kCubin;
  c->arch = static_cast<int>(n.attr_int(kPwCodeArchAttr, 0));
  c->nvrtc_version = static_cast<int>(n.attr_int(kPwCodeNvrtcAttr, 0));
  c->names = fused_pointwise_kernel_names();
  if (auto it = n.attrs.find(kPwCodeLoweredAttr); it != n.attrs.end()) c->lowered_names = it->second.strings;
  KILNRT_CHECK(
      c->lowered_names.size() == c->names.size() && !c->image.empty(), kInvalidEngine, n.describe(),
      "stored FusedPointwise code has " << c->lowered_names.size() << " kernel names, expected " << c->names.size());
  return c;
}

// A loaded module with the seven kernels; unloaded with the layer.
struct LoadedModule {
  CUmodule module = nullptr;
  int device = -1;
  std::vector<CUfunction> functions;
  ~LoadedModule() {
    if (!module) return;
    CUmodule m = module;
    kilnrt::cuda::release_quietly(device, "a FusedPointwise module",
                                  [m](const kilnrt::cuda::DriverApi& api) { return api.ModuleUnload(m); });
  }
};

// Loads `code` (throws kCuda naming the node when the driver refuses it).
std::unique_ptr<LoadedModule> load(const CompiledCode& code, int device, const std::string& where) {
  auto m = std::make_unique<LoadedModule>();
  m->device = device;
  kilnrt::cuda::ContextGuard guard(device);
  const kilnrt::cuda::DriverApi& api = guard.api();
  KILNRT_CU_CHECK(api, api.ModuleLoadData(&m->module, code.image.c_str()), where + " (" + code.target_name() + ")");
  for (const std::string& name : code.names) {
    CUfunction f = nullptr;
    KILNRT_CU_CHECK(api, api.ModuleGetFunction(&f, m->module, code.lowered_name(name).c_str()), where + " " + name);
    m->functions.push_back(f);
  }
  return m;
}

class FusedPointwiseLayer final : public CudaLayer {
 public:
  FusedPointwiseLayer(const ir::Node& n, const ir::Graph& g, int device)
      : name_(n.describe()), program_(ops::nn::read_pointwise_program(n)), is_bool_(bool_inputs(n, g)) {
    std::shared_ptr<const CompiledCode> code = stored_code(n);
    if (code) {
      try {
        module_ = load(*code, device, name_);
      } catch (const Error& e) {
        KILNRT_LOG(kWarning, name_ << ": the stored FusedPointwise kernel (" << code->target_name()
                                   << ") does not load on this GPU (" << e.message()
                                   << "); recompiling it from the node's program with NVRTC");
      }
    }
    if (!module_) {
      if (!code) KILNRT_LOG(kDebug, name_ << ": no stored FusedPointwise kernel, compiling it with NVRTC");
      const auto fresh = compile_node(n, g, device);
      module_ = load(*fresh, device, name_);
    }
  }
  std::string tactic() const override { return "nvrtc:fused-pointwise(" + ops::nn::describe_pointwise(program_) + ")"; }
  bool supports_16bit() const override { return true; }

  void enqueue(LayerLaunch& l) override {
    LayerOutput& y = l.outputs[0];
    const int64_t n = y.numel();
    if (n == 0) return;
    const Shape& os = y.shape;
    const int rank = static_cast<int>(os.size());
    KILNRT_CHECK(rank <= kPwMaxRank && l.inputs.size() == is_bool_.size(), kInvalidArgument, name_,
                 "FusedPointwise supports rank <= " << kPwMaxRank << ", got output rank " << rank);
    PwArgs a;
    std::memset(&a, 0, sizeof a);
    a.n = n;
    a.rank = rank;
    for (int d = 0; d < rank; ++d) a.dims[d] = os[d];
    a.out = y.data;
    a.out_code = float_code(y.dtype);
    KILNRT_CHECK(a.out_code >= 0, kUnsupported, name_,
                 "output dtype " << dtype_name(y.dtype) << " is not a float type");
    int variant = a.out_code;
    bool vec_ok = true;
    const int V = variant == 0 ? 4 : 8;
    auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    vec_ok = n % V == 0 && aligned(y.data);
    for (size_t k = 0; k < l.inputs.size(); ++k) {
      const LayerTensor& t = l.inputs[k];
      a.in[k] = t.data;
      a.code[k] = is_bool_[k] ? kPwBool : float_code(t.dtype);
      KILNRT_CHECK(a.code[k] >= 0 && (t.dtype == DType::kBool) == is_bool_[k], kUnsupported, name_,
                   "input " << k << " has dtype " << dtype_name(t.dtype));
      if (!is_bool_[k] && a.code[k] != variant) variant = 3;
      const Shape& s = t.shape;
      KILNRT_CHECK(s.size() <= os.size(), kInvalidArgument, name_,
                   "input " << k << " has rank " << s.size() << " above the output's " << os.size());
      int64_t st = 1;
      for (size_t j = 0; j < s.size(); ++j) {
        const size_t d = s.size() - 1 - j, od = os.size() - 1 - j;
        KILNRT_CHECK(
            s[d] == os[od] || s[d] == 1, kInvalidArgument, name_,
            "input " << k << " of shape " << shape_to_string(s) << " does not broadcast to " << shape_to_string(os));
        a.stride[k][od] = s[d] == 1 ? 0 : st;
        st *= s[d];
      }
      const int64_t numel = shape_numel(s);
      if (numel == n) {
        a.kind[k] = kPwContiguous;
        vec_ok = vec_ok && (is_bool_[k] || aligned(t.data));
      } else if (numel == 1) {
        a.kind[k] = kPwScalar;
      } else {
        a.kind[k] = kPwStrided;
        const int64_t last = a.stride[k][rank - 1];
        bool others = true;
        for (int d = 0; d < rank - 1; ++d) others = others && a.stride[k][d] % V == 0;
        if (os[rank - 1] % V != 0 || (last != 0 && last != 1))
          vec_ok = false;
        else if (last == 0)
          a.kind[k] = kPwStridedLast0;
        else if (others && (is_bool_[k] || aligned(t.data)))
          a.kind[k] = kPwStridedLast1;
        else
          vec_ok = false;
      }
    }
    vec_ok = vec_ok && variant < 3;
    const unsigned threads = 256;
    const int64_t work = vec_ok ? n / V : n;
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((work + threads - 1) / threads, int64_t{1} << 20));
    const size_t fi = vec_ok ? 4 + static_cast<size_t>(variant) : static_cast<size_t>(variant);
    void* params[] = {&a, nullptr};
    kilnrt::cuda::ContextGuard guard(module_->device);
    const kilnrt::cuda::DriverApi& api = guard.api();
    KILNRT_CU_CHECK(api,
                    api.LaunchKernel(module_->functions[fi], blocks, 1, 1, threads, 1, 1, 0, l.stream, params, nullptr),
                    name_);
  }

 private:
  std::string name_;
  PwProgram program_;
  std::vector<bool> is_bool_;
  std::unique_ptr<LoadedModule> module_;
};

std::string supports_fused_pointwise(const ir::Node& n, const ir::Graph& g) {
  try {
    const PwProgram p = ops::nn::read_pointwise_program(n);
    if (p.num_inputs > kPwMaxInputs) return "more than " + std::to_string(kPwMaxInputs) + " inputs";
    for (const std::string& in : n.inputs) {
      const DType t = value_dtype(g, in);
      if (!dtype_is_one_of(t, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kBool}))
        return "input '" + in + "' has dtype " + dtype_name(t);
    }
    if (!n.has_attr(kPwCodeAttr) && !fused_pointwise_available()) return "no stored kernel and no NVRTC to compile one";
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

KILNRT_REGISTER_CUDA_LAYER({"com.kilnrt:FusedPointwise"}, supports_fused_pointwise,
                           [](const LayerCreateArgs& a) -> std::unique_ptr<CudaLayer> {
                             return std::make_unique<FusedPointwiseLayer>(a.node, a.graph, a.device);
                           });

}  // namespace

bool fused_pointwise_available() {
  try {
    kilnrt::cuda::nvrtc_api();
    return true;
  } catch (const Error&) {
    return false;
  }
}

size_t embed_fused_pointwise_code(ir::Graph& graph, int device) {
  std::vector<ir::Node*> nodes;
  for (ir::Node& n : graph.nodes)
    if (n.domain == ops::nn::kKilnrtDomain && n.op_type == ops::nn::kFusedPointwiseOp) nodes.push_back(&n);
  if (nodes.empty()) return 0;
  // NVRTC runs are independent: compile on a few threads (build time of models with dozens of chains).
  std::vector<std::shared_ptr<const CompiledCode>> codes(nodes.size());
  std::vector<std::exception_ptr> errors(nodes.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < nodes.size(); i = next++) {
      try {
        codes[i] = compile_node(*nodes[i], graph, device);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const size_t threads =
      std::min<size_t>(nodes.size(), std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  for (size_t i = 0; i < nodes.size(); ++i) {
    ir::Node& n = *nodes[i];
    const CompiledCode& code = *codes[i];
    auto set_int = [&](const char* key, int64_t v) {
      ir::Attribute a;
      a.kind = ir::Attribute::Kind::kInt;
      a.i = v;
      n.attrs[key] = a;
    };
    ir::Attribute image, lowered;
    image.kind = ir::Attribute::Kind::kString;
    image.s = code.image;
    lowered.kind = ir::Attribute::Kind::kStrings;
    lowered.strings = code.lowered_names;
    n.attrs[kPwCodeAttr] = image;
    n.attrs[kPwCodeLoweredAttr] = lowered;
    set_int(kPwCodeKindAttr, code.kind == CompiledCode::Kind::kPtx ? 2 : 1);
    set_int(kPwCodeArchAttr, code.arch);
    set_int(kPwCodeNvrtcAttr, code.nvrtc_version);
  }
  KILNRT_LOG(kInfo, "compiled " << nodes.size() << " fused pointwise kernel(s) with NVRTC");
  return nodes.size();
}

}  // namespace kilnrt::backends::cuda
