// com.kilnrt fused ops made by the fusion passes (src/passes/fuse_*.cc), shared by their CPU references
// (fused_attention.cc, gemm/fused_matmul.cc) and the CUDA layers.
//
// com.kilnrt:FusedAttention(Q, K, V [, mask]) -> Y with attributes
//   scale (float), q_perm / k_perm / v_perm / out_perm (ints, optional; empty = identity).
// The logical operands are Ql = transpose(Q, q_perm) [batch..., Sq, D], Kl = transpose(K, k_perm) [batch..., Sk, D],
// Vl = transpose(V, v_perm) [batch..., Sk, Dv] (logical rank 2 to 4, equal batch dims). The mask (any float dtype,
// optional) broadcasts to [batch..., Sq, Sk]. O = softmax(scale * Ql Kl^T + mask) Vl, Y = transpose(O, out_perm).
// A row whose scores are all -inf (fully masked) gets uniform weights (the mean of V), never NaN: the convention of
// kilnrt's CUDA Softmax for such rows; with zero_masked_rows = 1 (int attribute, made from dynamo's SDPA NaN guard
// Where(IsNaN(softmax), 0, softmax)) such a row outputs zeros instead.
// q_part / k_part / v_part (ints [axis, start, size], optional; made by passes/pack_qkv_projection): the operand is
// the part [start, start + size) of its input along `axis` (a physical axis, before the perm), read in place: one
// packed projection [.., Hq + Hk + Hv, D] can feed Q, K and V as the same input.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "kilnrt/tensor.h"

namespace kilnrt::ops::nn {

constexpr const char* kKilnrtDomain = "com.kilnrt";

// Concrete geometry: every logical operand as 4 dims (b0, b1, s, d) with strides in elements of its contiguous
// physical tensor (padded batch dims have size 1, stride 0).
struct AttentionGeometry {
  int64_t b0 = 1, b1 = 1, sq = 0, sk = 0, d = 0, dv = 0;
  int64_t q[4] = {}, k[4] = {}, v[4] = {}, o[4] = {}, m[4] = {};  // strides (m: over b0, b1, sq, sk; 0 = broadcast)
  int64_t q_offset = 0, k_offset = 0, v_offset = 0;  // elements from the input's start to the operand's (parts)
  bool has_mask = false;
  Shape out_shape;  // Y's physical shape
};

// Validates shapes and perms against the node's attributes; throws kInvalidArgument naming the node.
AttentionGeometry attention_geometry(const ir::Node& node, const Shape& q, const Shape& k, const Shape& v,
                                     const Shape* mask);
// Reads a perm attribute of `rank` dims (identity when absent); throws naming the node when it is not a permutation.
std::vector<int64_t> attention_perm(const ir::Node& node, const char* attr, size_t rank);
// Reads a part attribute ("q_part", "k_part", "v_part") of an input of `rank` dims: {} when absent, else
// {axis, start, size}; throws naming the node when it is malformed. The input's extent along axis is checked by
// attention_geometry (and part_dims).
std::vector<int64_t> attention_part(const ir::Node& node, const char* attr, size_t rank);

}  // namespace kilnrt::ops::nn
