"""torch tensors from torch's non-default allocators into kilnrt: the runner sets PYTORCH_CUDA_ALLOC_CONF to
expandable_segments:True (VMM memory) or backend:cudaMallocAsync (stream-ordered pools); both report a NULL owning
context for their pointers, which kilnrt must accept (invariant 2). Allocation churn moves tensors around between
calls; outputs (also out=) match the CPU engine."""
import os

import common


def run(r):
    import torch
    import kilnrt
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    torch.zeros(1, device="cuda")
    backend = torch.cuda.get_allocator_backend() if hasattr(torch.cuda, "get_allocator_backend") else "?"
    if "cudaMallocAsync" in conf and backend != "cudaMallocAsync":
        raise AssertionError("torch did not pick up %s (backend %s)" % (conf, backend))
    r.note("PYTORCH_CUDA_ALLOC_CONF=%s, torch allocator backend %s" % (conf, backend))
    engines = {m: common.load_engine(kilnrt, m) for m in common.MODELS}
    if not common.torch_interop(kilnrt, engines, torch):
        r.partial("allocator not exercised: no torch interop")
        common.check_numpy_io(kilnrt, engines)
        return
    keep = []
    for round_ in range(4):
        keep.append(torch.empty((round_ + 1) * (8 << 20), dtype=torch.uint8, device="cuda"))  # churn
        common.check_torch_io(kilnrt, engines, torch, batches=(1, 3), tag=" round %d" % round_)
        if round_ % 2:
            keep.clear()
            torch.cuda.empty_cache()
    common.check_numpy_io(kilnrt, engines)


common.main(run)
