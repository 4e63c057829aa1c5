#include "engine/file_bytes.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/failure_injection.h"
#include "core/file_io.h"

namespace kilnrt::engine {

FileBytes::FileBytes(const std::string& path) {
  size_t file_size = 0;
  bool regular = false;
  const int fd = open_for_reading(path, &file_size, &regular);  // kIo with the OS's reason
  try {
    if (regular && file_size > 0) {
      failure_injection::on_host_allocation(file_size, "engine file");
      void* p = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (p != MAP_FAILED) {
        map_ = p;
        data_ = static_cast<const uint8_t*>(p);
        size_ = file_size;
      }
    }
    if (!map_) {
      // Not mappable: read it (a regular file into a buffer that is not zero-filled first).
      if (regular && file_size > 0) {
        copy_.reset(new uint8_t[file_size]);
        size_t got = 0;
        while (got < file_size) {
          const ssize_t n = ::read(fd, copy_.get() + got, file_size - got);
          if (n < 0 && errno == EINTR) continue;
          if (n < 0) throw_file_error("cannot read", path, errno);
          if (n == 0) break;  // the file shrank meanwhile: what is there (the engine's checks see the size)
          got += static_cast<size_t>(n);
        }
        size_ = got;
      } else {
        failure_injection::on_host_allocation(file_size, "engine file");
        std::vector<uint8_t> bytes;
        read_to_end(fd, path, file_size, &bytes);
        copy_.reset(new uint8_t[std::max<size_t>(bytes.size(), 1)]);
        if (!bytes.empty()) std::memcpy(copy_.get(), bytes.data(), bytes.size());
        size_ = bytes.size();
      }
      data_ = copy_.get();
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

FileBytes::~FileBytes() {
  if (map_) ::munmap(map_, size_);
}

}  // namespace kilnrt::engine
