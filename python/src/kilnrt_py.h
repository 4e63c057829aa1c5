// Parts of the kilnrt._kilnrt extension that live in their own files.
#pragma once
#include <pybind11/pybind11.h>

namespace kilnrt_python {

// Releases the GIL for its scope, like py::gil_scoped_release, but re-takes it in a destructor that may throw:
// after interpreter finalisation CPython ends daemon threads inside PyEval_RestoreThread with a forced unwind
// (pthread_exit), which aborts the process ("terminate called without an active exception") when it has to pass
// through a noexcept destructor such as pybind11's. Use this type everywhere, also as py::call_guard<GilRelease>.
class GilRelease {
 public:
  GilRelease() : state_(PyEval_SaveThread()) {}
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;
  ~GilRelease() noexcept(false) { PyEval_RestoreThread(state_); }

 private:
  PyThreadState* state_;
};

// _kilnrt.dlpack_info(capsule): reads an (unversioned) DLPack capsule without consuming it (dlpack.cc).
void register_dlpack(pybind11::module_& m);
// _kilnrt._Stream, _Event, _DeviceBuffer, _PinnedBuffer, _Kernel, stream_handle() (cuda_objects.cc); nothing in
// builds without CUDA (kilnrt/cuda.py then raises kilnrt.Error on use).
void register_cuda_objects(pybind11::module_& m);
// kilnrt.register_op: custom ops with Python shape / CPU functions and NVRTC CUDA kernels (custom_op.cc).
void register_custom_ops(pybind11::module_& m);
// _kilnrt._testing: failure-injection hooks for the test suite (testing_hooks.cc).
void register_testing_hooks(pybind11::module_& m);

}  // namespace kilnrt_python
