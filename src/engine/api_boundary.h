// The public API's exception boundary. What escapes build_engine / build_engine_file, Engine::load / from_bytes,
// Engine::create_context / run and every ExecutionContext call is a kilnrt::Error: a standard exception thrown
// inside the library (std::out_of_range from a container access, std::length_error, std::bad_alloc, ...) is a bug or
// an allocation failure, never a reason for the caller's process to terminate on an exception type it does not
// expect. It becomes kInternal (std::bad_alloc: kOutOfMemory) with where() naming the entry point and the message
// naming the exception type and its what(). kilnrt::Errors pass unchanged; other (non-std) exceptions too.
//
// The fuzzers (fuzz/*.cc) turn the translation off with set_exception_translation(false): for them a non-kilnrt
// exception escaping the library is a finding, and it must stay one instead of becoming a kInternal error.
#pragma once
#include <exception>
#include <memory>

#include "kilnrt/engine.h"
#include "kilnrt/error.h"

namespace kilnrt::engine {

// Process-wide; on by default.
void set_exception_translation(bool enabled);
bool exception_translation();

// Throws `caught` (a std::exception captured with std::current_exception() in a catch block) again, as the
// kilnrt::Error described above (or unchanged when the translation is off). The exception travels as an
// exception_ptr rather than through a bare `throw;` in a called function: a binary built with g++ 13 terminated
// ("terminate called without an active exception") on the H100 box with the bare form.
[[noreturn]] void rethrow_translated(const char* where, std::exception_ptr caught);

// Runs f() at the entry point `where` ("build_engine", "Engine::from_bytes", ...), translating what escapes it.
template <class F>
decltype(auto) translate_exceptions(const char* where, F&& f) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::exception&) {
    rethrow_translated(where, std::current_exception());
  }
}

// The context the public API hands out: forwards every call to `context`, translating what escapes it (where():
// "ExecutionContext::run", "ExecutionContext::enqueue", ...). A virtual added to ExecutionContext must be forwarded
// here too (api_boundary.cc).
std::unique_ptr<ExecutionContext> with_exception_translation(std::unique_ptr<ExecutionContext> context);
// True for a context made by with_exception_translation (what Engine::create_context hands out).
bool translates_exceptions(const ExecutionContext& context);

}  // namespace kilnrt::engine
