"""torch imported before / after kilnrt (argv[1] = before | after): importing either first changes nothing; kilnrt's
import does not initialise CUDA (torch.cuda.is_initialized() stays False); then numpy and torch-tensor I/O of both
fixtures match the CPU engine with the caller's context unchanged by every call."""
import sys

import common

order = sys.argv[1]


def run(r):
    if order == "before":
        import torch
        import kilnrt
    else:
        import kilnrt
        import torch
    if torch.cuda.is_initialized():
        raise AssertionError("CUDA was initialised by the imports alone")
    engines = {m: common.load_engine(kilnrt, m) for m in common.MODELS}
    common.check_numpy_io(kilnrt, engines)
    if common.torch_interop(kilnrt, engines, torch):
        common.check_torch_io(kilnrt, engines, torch)
    r.note("import order torch-%s-kilnrt" % order)


common.main(run)
