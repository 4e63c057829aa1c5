#include "backends/cuda/memory_plan.h"

#include <algorithm>

namespace kilnrt::backends::cuda {

ArenaLayout layout_arena(const std::vector<ArenaItem>& items) {
  ArenaLayout layout;
  layout.offsets.assign(items.size(), 0);
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a].first < items[b].first; });
  struct Block {
    size_t off, size;
    int end;
  };
  std::vector<Block> live;
  for (size_t it : order) {
    const ArenaItem& item = items[it];
    const size_t bytes = (std::max<size_t>(1, item.bytes) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    live.erase(std::remove_if(live.begin(), live.end(), [&](const Block& b) { return b.end < item.first; }),
               live.end());
    std::sort(live.begin(), live.end(), [](const Block& a, const Block& b) { return a.off < b.off; });
    size_t off = 0;
    for (const Block& b : live) {
      if (b.off >= off + bytes) break;
      off = std::max(off, b.off + b.size);
    }
    live.push_back({off, bytes, item.last});
    layout.offsets[it] = off;
    layout.bytes = std::max(layout.bytes, off + bytes);
  }
  return layout;
}

}  // namespace kilnrt::backends::cuda
