#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "core/check.h"
#include "core/failure_injection.h"

namespace kilnrt {

void throw_file_error(const char* action, const std::string& path, int err) {
  KILNRT_THROW(kIo, path, action << " '" << path << "'" << (err != 0 ? std::string(": ") + std::strerror(err) : ""));
}

int open_for_reading(const std::string& path, size_t* st_size, bool* regular) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_file_error("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw_file_error("cannot read", path, err);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw_file_error("cannot read", path, EISDIR);
  }
  if (st_size) *st_size = S_ISREG(st.st_mode) && st.st_size > 0 ? static_cast<size_t>(st.st_size) : 0;
  if (regular) *regular = S_ISREG(st.st_mode);
  return fd;
}

void read_to_end(int fd, const std::string& path, size_t size_hint, std::vector<uint8_t>* out) {
  const size_t start = out->size();
  size_t filled = start;
  try {
    out->resize(start + (size_hint > 0 ? size_hint : 64 * 1024));
  } catch (const std::bad_alloc&) {
    KILNRT_THROW(kOutOfMemory, path, "cannot allocate " << size_hint << " bytes to read '" << path << "'");
  }
  for (;;) {
    if (filled == out->size()) {
      if (size_hint > 0 && filled - start == size_hint) {
        // The expected size is read: one more byte tells whether the file grew meanwhile.
        uint8_t probe = 0;
        ssize_t n;
        do n = ::read(fd, &probe, 1);
        while (n < 0 && errno == EINTR);
        if (n < 0) throw_file_error("cannot read", path, errno);
        if (n == 0) break;
        out->push_back(probe);
        ++filled;
      }
      try {
        out->resize(out->size() * 2);
      } catch (const std::bad_alloc&) {
        KILNRT_THROW(kOutOfMemory, path, "cannot allocate " << out->size() * 2 << " bytes to read '" << path << "'");
      }
    }
    const ssize_t n = ::read(fd, out->data() + filled, out->size() - filled);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_file_error("cannot read", path, errno);
    }
    if (n == 0) break;
    filled += static_cast<size_t>(n);
  }
  out->resize(filled);
}

std::vector<uint8_t> read_whole_file(const std::string& path, const char* allocation_label) {
  size_t size = 0;
  const int fd = open_for_reading(path, &size);
  std::vector<uint8_t> bytes;
  try {
    if (allocation_label) failure_injection::on_host_allocation(size, allocation_label);
    read_to_end(fd, path, size, &bytes);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return bytes;
}

}  // namespace kilnrt
