// Host entry points of the Unique kernels (unique.cu), run by the data-dependent layer unique_layer.cc. Plain C++
// like kernels.h; each returns the CUDA status (0 = success). Nothing here reads device memory on the host: the
// layer reads its count with nonzero_flat (cuda/kernels/nonzero_scan.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/kernels.h"

namespace kilnrt::cuda::kernels::un {

// Element codes of Unique: 0 float32, 1 int64, 2 int32, 3 uint8 / bool, 4 int8, 5 float64, 6 float16, 7 bfloat16
// (compared as the float values they hold; -1: other).
// Slices of x viewed as [outer, n, inner]: slice k = x[o, k, i] for all (o, i), compared lexicographically in (o, i)
// order with the CPU reference's rule (first differing element decides).
struct UniqueView {
  const void* x = nullptr;
  int code = 0;
  int64_t outer = 1, n = 0, inner = 1;
};
// first[k] = the smallest j <= k whose slice equals slice k; flags[k] = first[k] == k.
int unique_first(const UniqueView& v, int64_t* first, uint8_t* flags, StreamT stream);
// For the u first occurrences firsts[0..u) (in order of occurrence): pos[k] = output slot (sorted: lexicographic
// rank, stable; else k), slot_of[firsts[k]] = k, indices[pos[k]] = firsts[k], counts[0..u) = 0.
int unique_place(const UniqueView& v, const int64_t* firsts, int64_t u, bool sorted, int64_t* pos, int64_t* slot_of,
                 int64_t* indices, int64_t* counts, StreamT stream);
// inverse[k] = pos[slot_of[first[k]]] and counts[inverse[k]] += 1 for every k < n.
int unique_inverse(int64_t n, const int64_t* first, const int64_t* pos, const int64_t* slot_of, int64_t* inverse,
                   int64_t* counts, StreamT stream);

}  // namespace kilnrt::cuda::kernels::un
