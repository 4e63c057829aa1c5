#include "engine/device_weights.h"

#include <cstring>

#include "core/check.h"
#include "core/checksum.h"

namespace kilnrt::engine {

const DeviceWeight* DeviceWeightImage::find(const std::string& key) const {
  // Linear scan: called once per uploaded buffer at load (hundreds), never per run.
  for (const DeviceWeight& w : entries)
    if (w.key == key) return &w;
  return nullptr;
}

bool DeviceWeightImageBuilder::contains(const std::string& key) const {
  for (const Item& it : items_)
    if (it.w.key == key) return true;
  return false;
}

void DeviceWeightImageBuilder::add(const std::string& key, const Tensor& host) {
  KILNRT_CHECK(!contains(key), kInternal, key, "device weight '" << key << "' recorded twice");
  Item item;
  item.w.key = key;
  item.w.dtype = host.dtype();
  item.w.shape = host.shape();
  item.w.nbytes = host.nbytes();
  item.host = host;
  item.crc = crc32c(host.raw(), host.nbytes());
  // The same bytes under another key (a layer's 16-bit copy of a constant the plan uploads as 16-bit too): shared.
  for (const Item& other : items_) {
    if (other.crc == item.crc && other.w.nbytes == item.w.nbytes && other.host.raw() != nullptr &&
        std::memcmp(other.host.raw(), host.raw(), host.nbytes()) == 0) {
      item.w.offset = other.w.offset;
      item.host = Tensor();  // bytes stored by `other`
      items_.push_back(std::move(item));
      return;
    }
  }
  item.w.offset = size_;
  size_ += (item.w.nbytes + kDeviceWeightAlignment - 1) / kDeviceWeightAlignment * kDeviceWeightAlignment;
  items_.push_back(std::move(item));
}

DeviceWeightImage DeviceWeightImageBuilder::finish() {
  DeviceWeightImage img;
  img.owned = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(size_), 0);
  for (Item& it : items_) {
    if (it.host.defined() && it.w.nbytes > 0) std::memcpy(img.owned->data() + it.w.offset, it.host.raw(), it.w.nbytes);
    img.entries.push_back(it.w);
  }
  img.data = img.owned->data();
  img.size = size_;
  items_.clear();
  size_ = 0;
  return img;
}

}  // namespace kilnrt::engine
