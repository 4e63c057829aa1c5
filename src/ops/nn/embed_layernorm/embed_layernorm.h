// com.kilnrt:EmbedLayerNorm (ops/nn/embed_layernorm/embed_layernorm.cc): the rule its addend follows, shared by the
// fusion pass (passes/fuse_embed_layernorm) and the CPU reference.
#pragma once
#include "ir/graph.h"

namespace kilnrt::ops::nn {

// The addend's shape without leading 1s is a suffix of `out` (those dims known): it broadcasts along out's leading
// dims only, so output row r takes addend row r % (addend elements / last dim).
inline bool addend_broadcasts_along_leading_dims(const Shape& addend, const ir::SymShape& out) {
  size_t first = 0;
  while (first + 1 < addend.size() && addend[first] == 1) ++first;
  const size_t n = addend.size() - first;
  if (n == 0 || n > out.size()) return false;
  for (size_t i = 0; i < n; ++i) {
    const ir::Dim& d = out[out.size() - n + i];
    if (!d.known() || d.value != addend[first + i]) return false;
  }
  return true;
}

}  // namespace kilnrt::ops::nn
