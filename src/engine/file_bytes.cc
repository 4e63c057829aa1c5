#include "engine/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "core/check.h"
#include "core/failure_injection.h"

namespace kilnrt::engine {

FileBytes::FileBytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  KILNRT_CHECK(fd >= 0, kIo, path, "cannot open engine file");
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
  if (regular) {
    failure_injection::on_host_allocation(static_cast<size_t>(st.st_size), "engine file");
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p != MAP_FAILED) {
      map_ = p;
      data_ = static_cast<const uint8_t*>(p);
      size_ = static_cast<size_t>(st.st_size);
    }
  }
  ::close(fd);
  if (map_) return;
  // Not mappable: read it (a buffer that is not zero-filled first).
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  KILNRT_CHECK(f.good(), kIo, path, "cannot open engine file");
  const std::streamsize size = f.tellg();
  KILNRT_CHECK(size >= 0, kIo, path, "cannot read engine file size");
  if (!regular) failure_injection::on_host_allocation(static_cast<size_t>(size), "engine file");
  copy_.reset(new uint8_t[std::max<size_t>(static_cast<size_t>(size), 1)]);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(copy_.get()), size);
  KILNRT_CHECK(f.gcount() == size, kIo, path, "error reading engine file");
  data_ = copy_.get();
  size_ = static_cast<size_t>(size);
}

FileBytes::~FileBytes() {
  if (map_) ::munmap(map_, size_);
}

}  // namespace kilnrt::engine
