// The bytes of an engine file for loading (Engine::load): the file mapped read-only with its pages populated from
// the page cache (no copy into a fresh buffer, no zero-filling: the read of a 200 MB engine drops from 40-150 ms to
// the page-table set-up), or read into memory where the file cannot be mapped (a pipe, an empty file, mmap
// refused). The mapping lives as long as the object; Engine::load keeps it only while the engine is built from it.
// Do not truncate or rewrite an engine file while it is being loaded (the mapping would see it change).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace kilnrt::engine {

class FileBytes {
 public:
  // Throws kIo naming the file when it cannot be opened or read.
  explicit FileBytes(const std::string& path);
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool mapped() const { return map_ != nullptr; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;
  std::unique_ptr<uint8_t[]> copy_;
};

}  // namespace kilnrt::engine
