// Reading user files (models, engines, .npy) with the operating system's reason in errors: kIo whose where() is the
// path and whose message is e.g. "cannot open 'x.onnx': No such file or directory" (std::strerror of the errno
// captured right after the failing call) or "cannot read 'models': Is a directory".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kilnrt {

// Throws kIo, where = `path`, message "<action> '<path>': <strerror(err)>" ("<action> '<path>'" when err is 0).
[[noreturn]] void throw_file_error(const char* action, const std::string& path, int err);

// Opens `path` read-only (close-on-exec) and returns the descriptor. Throws kIo (throw_file_error) when it cannot be
// opened, and "cannot read '<path>': Is a directory" for a directory. `st_size` / `regular` (optional) receive the
// file's size and whether it is a regular file.
int open_for_reading(const std::string& path, size_t* st_size = nullptr, bool* regular = nullptr);

// Reads `fd` from its current position to the end of the file into `out` (`size_hint` bytes are expected: a regular
// file's size; 0 when unknown). Throws kIo naming `path` on a read error. Does not close `fd`.
void read_to_end(int fd, const std::string& path, size_t size_hint, std::vector<uint8_t>* out);

// The whole file. `allocation_label`, when given, reports the buffer to failure injection (on_host_allocation) with
// the file's size first. A buffer that cannot be allocated throws kOutOfMemory naming the path.
std::vector<uint8_t> read_whole_file(const std::string& path, const char* allocation_label = nullptr);

}  // namespace kilnrt
