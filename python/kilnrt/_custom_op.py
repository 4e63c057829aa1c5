"""kilnrt.register_op: custom operators written in Python (shape and CPU functions) and CUDA C (NVRTC).

    import numpy as np, kilnrt

    kilnrt.register_op(
        "my.domain", "ScaledTanh",
        cpu=lambda inputs, attrs: (attrs.get("alpha", 1.0) * np.tanh(inputs[0])).astype(np.float32),
        cuda_source=r'''
            extern "C" __global__ void scaled_tanh(const float* x, float* y, long long n, float alpha) {
              long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
              if (i < n) y[i] = alpha * tanhf(x[i]);
            }''',
        cuda_kernel="scaled_tanh", float_attrs={"alpha": 1.0})

- ``cpu(inputs, attrs)``: ``inputs`` is a list of read-only numpy arrays (None for omitted optional inputs),
  ``attrs`` a dict of the node's attributes. Return one array, or a tuple with one array per output. Required:
  it runs CPU engines and is the reference.
- ``shape(input_types, attrs)``: ``input_types`` is a list of ``(shape, dtype)`` (shape a tuple with None for
  dims unknown at build time, or None when the rank is unknown; dtype a numpy dtype name); return a list of
  ``(shape, dtype)``, one per output. Default: every output is shaped and typed like input 0. Returning an
  input's shape unchanged keeps its symbolic (dynamic) dims.
- ``cuda_source`` / ``cuda_kernel``: an ``extern "C"`` kernel taking one pointer per present input, one per
  output, ``long long n`` (elements of output 0), then the ``long long`` args of ``launch``, then one ``float`` per
  entry of ``float_attrs`` ({attribute name: default}). Compiled with NVRTC (kilnrt.cuda.Kernel's cache) once per
  device when an engine is loaded. ``launch(input_shapes, output_shapes)`` returns ``(grid, block[, shared_bytes[,
  int_args]])``; without it: 256 threads per block, ceil(n / 256) blocks.

Threads: engines run with the GIL released; a callback holds the GIL only while it runs, so callbacks of engines
running in several threads take turns while the rest of each engine runs in parallel. Do not block in a callback
on another thread that needs the GIL. Custom ops stay registered for the life of the process; registering the
same domain/name/opset range again raises kilnrt.Error. Register before building or loading an engine that uses
the op: an engine file records the op by domain and name only, and loading it in a process that has not
registered the op raises kilnrt.Error naming it.
"""
from . import _kilnrt


def register_op(domain, name, cpu, shape=None, cuda_source=None, cuda_kernel=None, launch=None, float_attrs=None,
                nvrtc_options=(), since_version=1, until_version=1000, doc=""):
    """Registers the custom op ``domain:name`` (see the module docstring)."""
    if not callable(cpu):
        raise TypeError("cpu must be a callable (inputs, attrs) -> array(s)")
    for what, f in (("shape", shape), ("launch", launch)):
        if f is not None and not callable(f):
            raise TypeError("%s must be callable or None" % what)
    fattrs = [(str(k), float(v)) for k, v in (float_attrs or {}).items()]
    _kilnrt.register_custom_op(str(domain), str(name), cpu, shape, cuda_source or "", cuda_kernel or "", launch,
                               fattrs, [str(o) for o in nvrtc_options], int(since_version), int(until_version),
                               str(doc))


def registered_ops():
    """``"domain:name"`` of every registered custom op (C++ and Python)."""
    return list(_kilnrt.registered_custom_ops())
