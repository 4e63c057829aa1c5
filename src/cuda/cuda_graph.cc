// CudaGraph: capture on a private stream (thread-local mode), instantiate, update in place, launch on the caller's
// stream; capture-status query for callers' streams.
#include <cuda.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "core/check.h"
#include "cuda/capture_safety.h"
#include "cuda/context_guard.h"
#include "kilnrt/cuda/graph.h"

namespace kilnrt::cuda {
namespace {

// The kernel nodes of `graph` in topological order (ties broken by cuGraphGetNodes order). For a single-stream
// capture the graph is a chain, so this is the capture order.
std::vector<CUgraphNode> kernel_nodes_in_order(const DriverApi& api, CUgraph graph) {
  size_t n = 0;
  KILNRT_CU_CHECK(api, api.GraphGetNodes(graph, nullptr, &n), "CudaGraph");
  std::vector<CUgraphNode> nodes(n);
  if (n) KILNRT_CU_CHECK(api, api.GraphGetNodes(graph, nodes.data(), &n), "CudaGraph");
  nodes.resize(n);
  // Edges with their data where the driver can: programmatic edges (cuBLASLt's PDL launches) make the older query
  // fail as lossy. Only the endpoints matter here.
  size_t m = 0;
  auto edges = [&](CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data) {
    return api.GraphGetEdgesWithData ? api.GraphGetEdgesWithData(graph, from, to, data, &m)
                                     : api.GraphGetEdges(graph, from, to, &m);
  };
  KILNRT_CU_CHECK(api, edges(nullptr, nullptr, nullptr), "CudaGraph");
  std::vector<CUgraphNode> from(m), to(m);
  std::vector<CUgraphEdgeData> data(m);
  if (m) KILNRT_CU_CHECK(api, edges(from.data(), to.data(), data.data()), "CudaGraph");
  std::unordered_map<CUgraphNode, size_t> index;
  for (size_t i = 0; i < n; ++i) index[nodes[i]] = i;
  std::vector<size_t> indegree(n, 0);
  std::vector<std::vector<size_t>> out(n);
  for (size_t e = 0; e < m; ++e) {
    auto f = index.find(from[e]), t = index.find(to[e]);
    if (f == index.end() || t == index.end()) continue;
    out[f->second].push_back(t->second);
    ++indegree[t->second];
  }
  std::vector<CUgraphNode> ordered;
  std::vector<bool> done(n, false);
  for (size_t emitted = 0; emitted < n; ++emitted) {
    size_t pick = n;
    for (size_t i = 0; i < n; ++i)
      if (!done[i] && indegree[i] == 0) {
        pick = i;
        break;
      }
    KILNRT_CHECK(pick < n, kInternal, "CudaGraph", "captured graph has a cycle");
    done[pick] = true;
    for (size_t t : out[pick]) --indegree[t];
    CUgraphNodeType type;
    KILNRT_CU_CHECK(api, api.GraphNodeGetType(nodes[pick], &type), "CudaGraph");
    if (type == CU_GRAPH_NODE_TYPE_KERNEL) ordered.push_back(nodes[pick]);
  }
  return ordered;
}

const char* capture_failure_hint(CUresult r) {
  switch (r) {
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
      return ": the capture was invalidated — the captured work made a call not allowed while capturing (a "
             "synchronising call such as cudaMalloc, a non-async copy, cudaStreamSynchronize, or work on the legacy "
             "default stream); enqueue everything asynchronously on the capture stream";
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
      return ": work forked onto another stream during capture was not joined back into the capture stream "
             "(record an event there and make the capture stream wait on it)";
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
      return ": the capture was ended from another thread than the one that began it";
    default: return "";
  }
}

}  // namespace

CaptureStatus stream_capture_status(StreamHandle stream, int device) {
  ContextGuard guard(device);
  const DriverApi& api = guard.api();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  KILNRT_CU_CHECK(api, api.StreamGetCaptureInfo(stream, &status, &id, nullptr, nullptr, nullptr),
                  "stream_capture_status");
  switch (status) {
    case CU_STREAM_CAPTURE_STATUS_ACTIVE: return CaptureStatus::kActive;
    case CU_STREAM_CAPTURE_STATUS_INVALIDATED: return CaptureStatus::kInvalidated;
    default: return CaptureStatus::kNone;
  }
}

CudaGraph::CudaGraph(int device) : device_(device), stream_(device, /*non_blocking=*/true) {}

CudaGraph::~CudaGraph() { reset(); }

CudaGraph::CudaGraph(CudaGraph&& other) noexcept
    : device_(std::exchange(other.device_, -1)),
      stream_(std::move(other.stream_)),
      graph_(std::exchange(other.graph_, nullptr)),
      exec_(std::exchange(other.exec_, nullptr)),
      kernels_(std::move(other.kernels_)) {
  other.kernels_.clear();
}

CudaGraph& CudaGraph::operator=(CudaGraph&& other) noexcept {
  if (this != &other) {
    reset();
    device_ = std::exchange(other.device_, -1);
    stream_ = std::move(other.stream_);
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
    kernels_ = std::move(other.kernels_);
    other.kernels_.clear();
  }
  return *this;
}

void CudaGraph::reset() noexcept {
  kernels_.clear();
  if (CUgraphExec e = std::exchange(exec_, nullptr))
    release_quietly(device_, "a CUDA graph exec", [e](const DriverApi& api) { return api.GraphExecDestroy(e); });
  if (CUgraph g = std::exchange(graph_, nullptr))
    release_quietly(device_, "a CUDA graph", [g](const DriverApi& api) { return api.GraphDestroy(g); });
}

CudaGraph::CaptureResult CudaGraph::capture_impl(const std::function<void(StreamHandle)>& work) {
  KILNRT_CHECK(stream_, kInvalidArgument, "CudaGraph", "capture() on an empty CudaGraph (construct it with a device)");
  ContextGuard guard(device_);
  const DriverApi& api = guard.api();
  CUstream s = stream_.get();
  CUgraph captured = nullptr;
  CUresult r = CUDA_SUCCESS;
  {
    // No context-wide synchronisation (allocation, module loading) by kilnrt on other threads while capturing.
    CaptureGate gate(device_, CaptureGate::Kind::kShared);
    KILNRT_CU_CHECK(api, api.StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "CudaGraph::capture");
    try {
      work(s);
    } catch (...) {
      // End (and discard) the capture so that the private stream is usable again, then report the work's error.
      if (api.StreamEndCapture(s, &captured) == CUDA_SUCCESS && captured) api.GraphDestroy(captured);
      throw;
    }
    r = api.StreamEndCapture(s, &captured);
  }
  if (r != CUDA_SUCCESS) {
    if (captured) api.GraphDestroy(captured);
    throw Error(ErrorCode::kCuda, driver_error_string(api, r) + capture_failure_hint(r), "CudaGraph::capture",
                "cuStreamEndCapture", __FILE__, __LINE__);
  }
  KILNRT_CHECK(captured != nullptr, kCuda, "CudaGraph::capture", "cuStreamEndCapture returned no graph");

  // Read the captured kernels' launch configuration; on any error the new graph is destroyed.
  std::vector<KernelNode> kernels;
  std::vector<CUgraphNode> nodes;
  try {
    nodes = kernel_nodes_in_order(api, captured);
    for (CUgraphNode node : nodes) {
      CUDA_KERNEL_NODE_PARAMS p{};
      KILNRT_CU_CHECK(api, api.GraphKernelNodeGetParams(node, &p), "CudaGraph::capture");
      KernelNode k;
      k.node = node;
      k.function = p.func;
      k.grid = Dim3(p.gridDimX, p.gridDimY, p.gridDimZ);
      k.block = Dim3(p.blockDimX, p.blockDimY, p.blockDimZ);
      k.shared_mem_bytes = p.sharedMemBytes;
      kernels.push_back(k);
    }
  } catch (...) {
    api.GraphDestroy(captured);
    throw;
  }

  if (exec_ && kernels.size() == kernels_.size()) {
    CUgraphExecUpdateResultInfo info{};
    r = api.GraphExecUpdate(exec_, captured, &info);
    if (r == CUDA_SUCCESS) {
      // exec_ now runs the new work; it stays addressed by the nodes of graph_ (paired in the same order).
      for (size_t i = 0; i < kernels.size(); ++i) kernels[i].node = kernels_[i].node;
      kernels_ = std::move(kernels);
      api.GraphDestroy(captured);
      return CaptureResult::kUpdated;
    }
    if (r != CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) {
      api.GraphDestroy(captured);
      KILNRT_CU_CHECK(api, r, "CudaGraph::capture (cuGraphExecUpdate)");
    }
  }
  CUgraphExec exec = nullptr;
  r = api.GraphInstantiateWithFlags(&exec, captured, 0);
  if (r != CUDA_SUCCESS) {
    api.GraphDestroy(captured);
    KILNRT_CU_CHECK(api, r, "CudaGraph::capture (cuGraphInstantiateWithFlags)");
  }
  if (exec_) api.GraphExecDestroy(exec_);
  if (graph_) api.GraphDestroy(graph_);
  exec_ = exec;
  graph_ = captured;
  kernels_ = std::move(kernels);
  return CaptureResult::kInstantiated;
}

void CudaGraph::launch(StreamHandle stream) const {
  KILNRT_CHECK(exec_ != nullptr, kInvalidArgument, "CudaGraph", "launch() before a successful capture()");
  ContextGuard guard(device_);
  KILNRT_CU_CHECK(guard.api(), guard.api().GraphLaunch(exec_, stream), "CudaGraph::launch");
}

void CudaGraph::set_kernel_params(size_t index, void** params) {
  KILNRT_CHECK(index < kernels_.size(), kInvalidArgument, "CudaGraph",
               "kernel node " << index << " does not exist: the graph has " << kernels_.size() << " kernel node(s)");
  const KernelNode& k = kernels_[index];
  set_kernel_launch(index, k.grid, k.block, k.shared_mem_bytes, params);
}

void CudaGraph::set_kernel_launch(size_t index, Dim3 grid, Dim3 block, unsigned shared_mem_bytes, void** params) {
  KILNRT_CHECK(exec_ != nullptr, kInvalidArgument, "CudaGraph", "set_kernel_params() before a successful capture()");
  KILNRT_CHECK(index < kernels_.size(), kInvalidArgument, "CudaGraph",
               "kernel node " << index << " does not exist: the graph has " << kernels_.size() << " kernel node(s)");
  KernelNode& k = kernels_[index];
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = k.function;
  p.gridDimX = grid.x;
  p.gridDimY = grid.y;
  p.gridDimZ = grid.z;
  p.blockDimX = block.x;
  p.blockDimY = block.y;
  p.blockDimZ = block.z;
  p.sharedMemBytes = shared_mem_bytes;
  p.kernelParams = params;
  ContextGuard guard(device_);
  KILNRT_CU_CHECK(guard.api(), guard.api().GraphExecKernelNodeSetParams(exec_, k.node, &p),
                  "CudaGraph kernel node " + std::to_string(index));
  k.grid = grid;
  k.block = block;
  k.shared_mem_bytes = shared_mem_bytes;
}

}  // namespace kilnrt::cuda
