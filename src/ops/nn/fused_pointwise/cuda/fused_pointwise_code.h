// Build-time side of the com.kilnrt:FusedPointwise CUDA layer (fused_pointwise_layer.cc): the builder compiles each
// fused node's generated kernel with NVRTC for the target GPU and stores the compiled image in the node's attributes
// (kilnrt_code*), which the engine file keeps; loading the engine then loads that image without running NVRTC.
#pragma once
#include <string>

#include "ir/graph.h"

namespace kilnrt::backends::cuda {

// Attribute names of the stored code.
constexpr const char* kPwCodeAttr = "kilnrt_code";                 // string: cubin bytes or PTX text
constexpr const char* kPwCodeKindAttr = "kilnrt_code_kind";        // int: 1 cubin, 2 PTX
constexpr const char* kPwCodeArchAttr = "kilnrt_code_arch";        // int: 90
constexpr const char* kPwCodeNvrtcAttr = "kilnrt_code_nvrtc";      // int: NVRTC version that compiled it
constexpr const char* kPwCodeLoweredAttr = "kilnrt_code_lowered";  // strings: mangled kernel names, in order

// True when NVRTC can be loaded here (else the builder does not fuse pointwise chains).
bool fused_pointwise_available();
// Compiles every FusedPointwise node of `graph` for `device`'s architecture and stores the code in its attributes.
// Returns the number of nodes compiled. Throws kilnrt::Error naming the node when NVRTC fails.
size_t embed_fused_pointwise_code(ir::Graph& graph, int device);

}  // namespace kilnrt::backends::cuda
