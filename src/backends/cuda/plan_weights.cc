// CudaPlan's device weights: the stored image (one allocation + one copy at load), recording for the builder, and
// the choice of the constants that only the device reads (stored without host data). plan_weights.h.
#include "backends/cuda/plan_weights.h"

#include <chrono>

#include "ops/cuda/data_dependent_layer.h"
#include "backends/cuda/plan_internal.h"
#include "core/logging.h"
#include "cuda/context_guard.h"

namespace kilnrt::backends::cuda {
using namespace plan_detail;  // plan_internal.h

namespace {
// Constants below this size keep their host data even when only the device reads them: small ones (scalars,
// BatchNorm vectors, shape-like tensors) are what layers may read on the host, and they cost nothing to load.
constexpr size_t kDeviceOnlyMinBytes = 64 * 1024;

// Every value a subgraph (If / Loop / Scan body, nested) reads: outer constants may be among them.
void collect_subgraph_reads(const ir::Graph& g, std::set<std::string>& out) {
  for (const ir::Node& n : g.nodes) {
    for (const auto& [name, a] : n.attrs) {
      if (a.kind != ir::Attribute::Kind::kGraph || !a.g) continue;
      for (const ir::Node& inner : a.g->nodes) out.insert(inner.inputs.begin(), inner.inputs.end());
      out.insert(a.g->outputs.begin(), a.g->outputs.end());
      collect_subgraph_reads(*a.g, out);
    }
  }
}
}  // namespace

CudaPlan::Weights::Weights(int device, const engine::DeviceWeightImage* image, bool record) : device_(device) {
  if (record) recorder_ = std::make_unique<engine::DeviceWeightImageBuilder>();
  if (!image || image->empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  for (const engine::DeviceWeight& w : image->entries) image_offset_[w.key] = w.offset;
  device_only_ = image->device_only;
  image_ = kilnrt::cuda::DeviceBuffer(device_, std::max<uint64_t>(image->size, 1));
  if (image->size > 0) {
    kilnrt::cuda::ContextGuard guard(device_);
    const auto& api = guard.api();
    // One copy of the whole image (load time, not the hot path): from the engine file's bytes.
    KILNRT_CU_CHECK(api, api.MemcpyHtoDAsync(dptr(image_.data()), image->data, image->size, nullptr), "device weights");
    KILNRT_CU_CHECK(api, api.StreamSynchronize(nullptr), "device weights");
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  KILNRT_LOG(kInfo, "device weights: " << image->entries.size() << " buffers, " << image->size
                                       << " bytes, one allocation + one copy in " << ms << " ms");
}

const void* CudaPlan::Weights::find(const std::string& key) const {
  auto it = ptrs_.find(key);
  if (it != ptrs_.end()) return it->second;
  auto im = image_offset_.find(key);
  if (im != image_offset_.end()) return static_cast<const char*>(image_.data()) + im->second;
  return nullptr;
}

const void* CudaPlan::Weights::get(const std::string& name) const {
  const void* p = find(name);
  KILNRT_CHECK(p, kInternal, name, "constant '" << name << "' was not uploaded to the GPU");
  return p;
}

const void* CudaPlan::Weights::upload(const std::string& key, const Tensor& host) {
  if (const void* p = find(key)) return p;
  kilnrt::cuda::DeviceBuffer buf(device_, std::max<size_t>(host.nbytes(), 1));
  if (host.nbytes() > 0) {
    kilnrt::cuda::ContextGuard guard(device_);
    const auto& api = guard.api();
    // Synchronous upload at load time (not the hot path): pinned staging is not worth it here.
    KILNRT_CU_CHECK(api, api.MemcpyHtoDAsync(dptr(buf.data()), host.raw(), host.nbytes(), nullptr), key);
    KILNRT_CU_CHECK(api, api.StreamSynchronize(nullptr), key);
  }
  if (recorder_) recorder_->add(key, host);
  const void* p = buf.data();
  buffers_.push_back(std::move(buf));
  ptrs_[key] = p;
  return p;
}

engine::DeviceWeightImage CudaPlan::Weights::recorded_image() {
  KILNRT_CHECK(recorder_, kInternal, "CudaPlan", "the plan was not made in recording mode");
  return recorder_->finish();
}

engine::DeviceWeightImage CudaPlan::device_weight_image() {
  engine::DeviceWeightImage img = weights_->recorded_image();
  // Constants read on the host by anything: host steps, layers' host inputs (and sync points), data-dependent and
  // control-flow layers (whose bodies may read them on the host), graph outputs.
  std::set<std::string> host_read(graph_.outputs.begin(), graph_.outputs.end());
  collect_subgraph_reads(graph_, host_read);
  for (const Step& st : steps_) {
    const bool all = st.host || st.data_dependent || st.node->op_type == "If" || st.node->op_type == "Loop" ||
                     st.node->op_type == "Scan";
    std::vector<int> on_host = all ? std::vector<int>{} : st.layer->host_inputs();
    on_host.insert(on_host.end(), st.sync_in.begin(), st.sync_in.end());
    for (size_t i = 0; i < st.inputs.size(); ++i) {
      if (st.inputs[i] < 0) continue;
      if (all || std::find(on_host.begin(), on_host.end(), static_cast<int>(i)) != on_host.end())
        host_read.insert(slot_names_[st.inputs[i]]);
    }
  }
  for (const engine::DeviceWeight& w : img.entries) {
    auto c = graph_.constants.find(w.key);
    if (c == graph_.constants.end() || host_read.count(w.key) || c->second.nbytes() < kDeviceOnlyMinBytes) continue;
    img.device_only.insert(w.key);
  }
  return img;
}

}  // namespace kilnrt::backends::cuda
