// kilnrt._kilnrt._testing: the failure-injection hooks (src/core/failure_injection.h) for the Python test suite, so
// that the end-to-end tests can fail every allocation / CUDA call along a real model's build and inference
// (tests/python/test_failure_injection_models.py). Not part of the public API.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "kilnrt_py.h"

// The bindings see only include/ (docs/architecture.md: python/ uses the public headers): these declarations repeat the
// test hooks of src/core/failure_injection.h, which libkilnrt exports.
namespace kilnrt::failure_injection {
void fail_host_allocation_at(int64_t index);
int64_t host_allocations_seen();
bool host_failure_fired();
void fail_call_at(int64_t index);
int64_t calls_seen();
bool call_failure_fired();
std::string last_failed_site();
void reset();
}  // namespace kilnrt::failure_injection

namespace py = pybind11;
namespace fi = kilnrt::failure_injection;

namespace kilnrt_python {

void register_testing_hooks(py::module_& m) {
  py::module_ t = m.def_submodule("_testing", "failure injection for kilnrt's own tests (not a public API)");
  t.def("fail_host_allocation_at", &fi::fail_host_allocation_at, py::arg("index"),
        "the index-th host allocation from now (0-based) fails with kOutOfMemory; -1 disarms");
  t.def("host_allocations_seen", &fi::host_allocations_seen);
  t.def("host_failure_fired", &fi::host_failure_fired);
  t.def("fail_call_at", &fi::fail_call_at, py::arg("index"),
        "the index-th driver / cuDNN / cuBLASLt / NVRTC call from now (0-based) fails; -1 disarms");
  t.def("calls_seen", &fi::calls_seen);
  t.def("call_failure_fired", &fi::call_failure_fired);
  t.def("last_failed_site", &fi::last_failed_site);
  t.def("reset", &fi::reset);
}

}  // namespace kilnrt_python
