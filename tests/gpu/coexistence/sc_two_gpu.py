"""Two GPUs: an engine built with device="cuda:1" and loaded with kilnrt.Engine(path, device=1) while torch works on
device 0 (its current device): tensors on cuda:1 in, outputs on cuda:1 out, correct; numpy I/O correct; torch's
current device and the thread's context unchanged; a cuda:0 tensor is refused with a clear error naming the
devices. SKIPs with the reason on a one-GPU machine."""
import os
import tempfile

import common
import ctxcheck


def run(r):
    import torch
    import kilnrt
    n = torch.cuda.device_count()
    if n < 2:
        raise common.Skip("needs 2 GPUs, this machine has %d (run it on a multi-GPU box)" % n)
    torch.cuda.set_device(0)
    a = torch.randn(1024, 1024, device="cuda:0")
    (a @ a).sum().item()
    tmp = tempfile.mkdtemp(prefix="kilnrt-dev1-")
    engines = {}
    for m in common.MODELS:
        path = os.path.join(tmp, m + ".cuda1.engine")
        common.kcall("build %s cuda:1" % m, kilnrt.build, os.path.join(common.FIXTURES, m + ".onnx"), path,
                     device="cuda:1")
        try:
            engines[m] = common.kcall("Engine(%s, device=1)" % m, kilnrt.Engine, path, device=1)
        except TypeError as e:
            raise AssertionError("kilnrt.Engine(path, device=1) is not supported: %s" % e)
    if torch.cuda.current_device() != 0:
        raise AssertionError("torch's current device changed to %d" % torch.cuda.current_device())
    s0 = ctxcheck.state()
    common.check_numpy_io(kilnrt, engines, tag=" dev1")
    if common.torch_interop(kilnrt, engines, torch, device=1):
        common.check_torch_io(kilnrt, engines, torch, tag=" dev1", device=1)
        x0 = torch.from_numpy(common.fixture_input("transformer_encoder_layer", 1)).to("cuda:0")
        try:
            common.kcall("cuda:0 tensor into a device-1 engine", engines["transformer_encoder_layer"], x0)
        except kilnrt.Error as e:
            if "cuda:0" not in str(e) and "device" not in str(e).lower():
                raise AssertionError("unclear error: %s" % e)
            r.note("cuda:0 tensor refused: " + str(e).splitlines()[0][:120])
        else:
            raise AssertionError("a cuda:0 tensor was accepted by an engine on device 1")
    (a @ a).sum().item()
    if torch.cuda.current_device() != 0 or ctxcheck.state() != s0:
        raise AssertionError("torch's device or the context changed")


common.main(run)
