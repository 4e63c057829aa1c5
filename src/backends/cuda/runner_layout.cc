// CudaRunner's host-only layout of one input-shape tuple (layout_for: concrete shapes, host values, arena offsets)
// and the per-step shape helpers it shares with the segmented run of data-dependent plans (runner_segments.cc).
#include <algorithm>

#include "backends/cuda/float32_island.h"
#include "backends/cuda/memory_plan.h"
#include "backends/cuda/plan_internal.h"

namespace kilnrt::backends::cuda {
using namespace plan_detail;

void CudaRunner::eval_host_step(const CudaPlan::Step& step, std::vector<Shape>& shapes, std::vector<DType>& dtypes,
                                std::vector<Tensor>& host_values) {
  const ir::Node& node = *step.node;
  try {
    if (always_host(node.op_type)) {
      host_values[step.outputs[0]] = shape_value(node, shapes[step.inputs[0]], step.opset);
    } else {
      ops::CpuContext ctx{node, step.opset, {}, {}};
      for (int in : step.inputs) ctx.inputs.push_back(in >= 0 ? &host_values[in] : nullptr);
      ctx.outputs.resize(step.outputs.size());
      step.schema->cpu(ctx);
      for (size_t o = 0; o < step.outputs.size(); ++o)
        if (step.outputs[o] >= 0) host_values[step.outputs[o]] = ctx.outputs[o].clone();
    }
  } catch (const Error& e) {
    if (e.where().find(node.name) != std::string::npos) throw;
    throw e.with_context(node.describe());
  }
  for (int os : step.outputs) {
    if (os < 0 || !host_values[os].defined()) continue;
    shapes[os] = host_values[os].shape();
    dtypes[os] = host_values[os].dtype();
  }
}

void CudaRunner::infer_device_step(const CudaPlan::Step& step, std::vector<Shape>& shapes, std::vector<DType>& dtypes,
                                   const std::vector<Tensor>& host_values) {
  const ir::Node& node = *step.node;
  try {
    std::vector<ir::TensorType> types(step.inputs.size());
    ops::ShapeContext ctx{node, step.opset, {}, {}, {}};
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      const int in = step.inputs[i];
      if (in < 0) {
        ctx.inputs.push_back(nullptr);
        ctx.values.push_back(nullptr);
        continue;
      }
      types[i].dtype = dtypes[in];
      types[i].has_shape = true;
      types[i].shape = ir::shape_to_sym(shapes[in]);
      ctx.inputs.push_back(&types[i]);
      ctx.values.push_back(host_values[in].defined() ? &host_values[in] : nullptr);
    }
    ctx.outputs.resize(step.outputs.size());
    KILNRT_CHECK(static_cast<bool>(step.schema->infer), kInternal, node.describe(), "op has no shape function");
    step.schema->infer(ctx);
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      const int os = step.outputs[o];
      if (os < 0) continue;
      const ir::TensorType& t = ctx.outputs[o];
      KILNRT_CHECK(t.has_shape && ir::sym_shape_known(t.shape), kUnsupported, node.describe(),
                   "output '" << node.outputs[o] << "' has no concrete shape for these input shapes ("
                              << (t.has_shape ? ir::sym_shape_to_string(t.shape) : "rank unknown") << ")");
      shapes[os] = ir::sym_shape_to_shape(t.shape);
      dtypes[os] = t.dtype;
    }
  } catch (const Error& e) {
    if (e.where().find(node.name) != std::string::npos) throw;
    throw e.with_context(node.describe());
  }
}

size_t CudaRunner::arena_bytes_for(const std::vector<Shape>& input_shapes) const {
  // Plans with sync points size their values during the run (runner_segments.cc): no arena to report.
  if (plan_.sync_points_ > 0) return 0;
  return layout_for(input_shapes)->arena_bytes;
}

std::unique_ptr<CudaRunner::ShapeState> CudaRunner::layout_for(const std::vector<Shape>& input_shapes) const {
  // Host only (no CUDA call): concrete shapes, host values and the arena layout of one input-shape tuple.
  const ir::Graph& g = plan_.graph_;
  const size_t nslots = plan_.slot_names_.size();
  auto st = std::make_unique<ShapeState>();
  st->shapes.resize(nslots);
  st->dtypes.assign(nslots, DType::kUndefined);
  st->host_values.resize(nslots);
  std::vector<uint8_t> known(nslots, 0);
  for (size_t i = 0; i < plan_.input_slots_.size(); ++i) {
    const int s = plan_.input_slots_[i];
    st->shapes[s] = input_shapes.at(i);
    st->dtypes[s] = g.type_of(g.inputs[i])->dtype;
    known[s] = 1;
  }
  for (const auto& [name, t] : g.constants) {
    auto it = plan_.slot_of_.find(name);
    if (it == plan_.slot_of_.end()) continue;
    st->shapes[it->second] = t.shape();
    st->dtypes[it->second] = t.dtype();
    st->host_values[it->second] = t;
    known[it->second] = 1;
  }
  // Concrete shapes, host values of the shape computations.
  for (const CudaPlan::Step& step : plan_.steps_) {
    if (step.host)
      eval_host_step(step, st->shapes, st->dtypes, st->host_values);
    else
      infer_device_step(step, st->shapes, st->dtypes, st->host_values);
    for (int os : step.outputs)
      if (os >= 0) known[os] = 1;
  }
  const DType a16 = plan_.act16_;
  st->storage = st->dtypes;
  if (a16 != DType::kUndefined)
    for (size_t s = 0; s < nslots; ++s)
      if (st->dtypes[s] == DType::kFloat32) st->storage[s] = a16;
  // Storage roots (aliases share their input's storage) and lifetimes.
  std::vector<int> root(nslots);
  for (size_t s = 0; s < nslots; ++s) root[s] = static_cast<int>(s);
  const int nsteps = static_cast<int>(plan_.steps_.size());
  std::vector<int> first(nslots, -1), last(nslots, -1);
  for (int s : plan_.input_slots_) {
    first[s] = 0;
    last[s] = nsteps;
  }
  for (int i = 0; i < nsteps; ++i) {
    const CudaPlan::Step& step = plan_.steps_[i];
    if (step.host) continue;
    for (int in : step.inputs)
      if (in >= 0) last[root[in]] = std::max(last[root[in]], i);
    if ((step.layer->is_alias() || step.view) && step.inputs[0] >= 0 && step.outputs[0] >= 0) {
      root[step.outputs[0]] = root[step.inputs[0]];
      continue;
    }
    for (int os : step.outputs)
      if (os >= 0 && first[os] < 0) {
        first[os] = i;
        last[os] = std::max(last[os], i);
      }
  }
  for (int os : plan_.output_slots_) last[root[os]] = nsteps;
  // Greedy first-fit by definition order over the arena-backed roots (device values that are not host / constants),
  // plus, in 16-bit engines, float32 staging of graph I/O and float32 scratch of float32 islands.
  st->arena_offset.assign(nslots, -1);
  struct Item {
    int first, last;
    size_t bytes;
    int64_t* offset;
  };
  std::vector<Item> items;
  for (size_t s = 0; s < nslots; ++s)
    if (root[s] == static_cast<int>(s) && first[s] >= 0 && !plan_.host_slot_[s])
      items.push_back(
          {first[s], last[s], shape_numel(st->shapes[s]) * dtype_size(st->storage[s]), &st->arena_offset[s]});
  st->in32_offset.assign(plan_.input_slots_.size(), -1);
  st->out32_offset.assign(plan_.output_slots_.size(), -1);
  st->scratch.assign(plan_.steps_.size(), {});
  if (a16 != DType::kUndefined) {  // (16-bit I/O, set_io_dtypes: none for the values bound in 16 bits)
    for (size_t i = 0; i < plan_.input_slots_.size(); ++i) {
      const int s = plan_.input_slots_[i];
      if (st->storage[s] != st->dtypes[s] && !(i < in16_.size() && in16_[i]))
        items.push_back({0, 0, size_t(shape_numel(st->shapes[s])) * 4, &st->in32_offset[i]});
    }
    for (size_t i = 0; i < plan_.output_slots_.size(); ++i) {
      const int s = plan_.output_slots_[i];
      if (st->storage[s] != st->dtypes[s] && !(i < out16_.size() && out16_[i]))
        items.push_back({nsteps, nsteps, size_t(shape_numel(st->shapes[s])) * 4, &st->out32_offset[i]});
    }
  }
  {  // float32 islands: of 16-bit engines, and of 16-bit model tensors in any engine (float32_island.h)
    for (int i = 0; i < nsteps; ++i) {
      const CudaPlan::Step& step = plan_.steps_[i];
      if (step.host || !step.island) continue;
      std::vector<int64_t>& sc = st->scratch[i];
      sc.assign(step.inputs.size() + step.outputs.size(), -1);
      for (size_t k = 0; k < sc.size(); ++k) {
        const bool in = k < step.inputs.size();
        const int s = in ? step.inputs[k] : step.outputs[k - step.inputs.size()];
        if (s < 0 || !island_converts(st->dtypes[s], st->storage[s], step.island_view != nullptr)) continue;
        if (in && std::find(step.host_in.begin(), step.host_in.end(), static_cast<int>(k)) != step.host_in.end())
          continue;
        items.push_back({i, i, size_t(shape_numel(st->shapes[s])) * 4, nullptr});
        items.back().offset = &sc[k];  // sc is not resized again
      }
    }
  }
  // Reformatted inputs (layout_plan.h): a copy in the other layout, live during the step only.
  for (int i = 0; i < nsteps; ++i) {
    const CudaPlan::Step& step = plan_.steps_[i];
    if (step.host || step.reformat.empty()) continue;
    std::vector<int64_t>& sc = st->scratch[i];
    sc.assign(step.inputs.size() + step.outputs.size(), -1);
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      if (step.reformat[k] == 0 || step.inputs[k] < 0) continue;
      const int s = step.inputs[k];
      items.push_back({i, i, size_t(shape_numel(st->shapes[s])) * dtype_size(st->storage[s]), nullptr});
      items.back().offset = &sc[k];  // sc is not resized again
    }
  }
  std::vector<ArenaItem> arena_items;
  for (const Item& item : items) arena_items.push_back({item.first, item.last, item.bytes});
  const ArenaLayout layout = layout_arena(arena_items);  // memory_plan.h: the layout the builder reports too
  for (size_t i = 0; i < items.size(); ++i) *items[i].offset = static_cast<int64_t>(layout.offsets[i]);
  st->arena_bytes = layout.bytes;
  for (size_t s = 0; s < nslots; ++s)
    if (root[s] != static_cast<int>(s)) st->arena_offset[s] = -2 - root[s];  // alias marker (resolved at enqueue)
  return st;
}

}  // namespace kilnrt::backends::cuda
