// Activation arena layout of the CUDA backend: pure host code (no CUDA call), shared by CudaRunner (per shape tuple,
// at run time) and the builder (the profile's max shapes, stored in the engine so that `inspect` and
// Engine::activation_memory_size() report it without a GPU).
//
// Each item is a buffer live from step `first` to step `last` (inclusive). Items are placed greedily in order of
// `first` (stable), each at the lowest 256-byte-aligned offset that does not overlap a buffer still live at its
// first step (first fit). Zero-byte items still take one aligned unit so that every item has its own address.
#pragma once
#include <cstddef>
#include <vector>

namespace kilnrt::backends::cuda {

constexpr size_t kArenaAlignment = 256;

struct ArenaItem {
  int first = 0, last = 0;  // live over steps [first, last]
  size_t bytes = 0;
};

struct ArenaLayout {
  std::vector<size_t> offsets;  // per item, in the order given
  size_t bytes = 0;             // arena size: end of the highest item (a multiple of kArenaAlignment)
};

ArenaLayout layout_arena(const std::vector<ArenaItem>& items);

}  // namespace kilnrt::backends::cuda
