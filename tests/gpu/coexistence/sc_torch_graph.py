"""kilnrt called while torch captures a CUDA graph (torch.cuda.graph): kilnrt sees the capturing stream and
enqueues into the capture (invariant 4); replaying the graph with new data in the static input gives the CPU
engine's results, also for a torch op recorded after kilnrt and for out=.
argv[1]: "warmed" captures on the side stream the warm-up ran on (torch.cuda.graph(g, stream=side));
         "fresh" captures on torch's own capture stream, which kilnrt has never seen (torch's documented pattern:
         warm up on a side stream, then `with torch.cuda.graph(g):`) — kilnrt must not allocate during the capture."""
import sys

import numpy as np

import common


def run(r):
    import torch
    import kilnrt
    engines = {m: common.load_engine(kilnrt, m) for m in common.MODELS}
    if not common.torch_interop(kilnrt, engines, torch):
        r.partial("capture not exercised: no torch interop (numpy I/O checked instead)")
        common.check_numpy_io(kilnrt, engines)
        return
    for model, engine in engines.items():
        x = common.fixture_input(model, 2)
        static_x = torch.from_numpy(x).cuda()
        ref_shape = common.reference(model, x).shape
        static_out = torch.empty(ref_shape, device="cuda")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream (sizes arenas, handles, descriptors)
            for _ in range(3):
                common.kcall("%s warm-up" % model, engine, static_x)
                common.kcall("%s warm-up out=" % model, engine, static_x, out=static_out)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=side if sys.argv[1:] == ["warmed"] else None):
            static_y = common.kcall("%s in capture" % model, engine, static_x)
            static_z = static_y * 2.0 + 1.0
            common.kcall("%s in capture out=" % model, engine, static_x, out=static_out)
        rng = np.random.default_rng(7)
        for trial in range(3):
            xn = (x * (1.0 + 0.1 * trial) + rng.standard_normal(x.shape).astype(np.float32) * 0.05).astype(np.float32)
            static_x.copy_(torch.from_numpy(xn))
            g.replay()
            torch.cuda.synchronize()
            ref = common.reference(model, xn)
            common.check_close(static_y, ref, "%s replay %d" % (model, trial))
            common.check_close(static_out, ref, "%s replay %d out=" % (model, trial))
            common.check_close(static_z, ref * 2.0 + 1.0, "%s replay %d torch op after kilnrt" % (model, trial))
        # Eager use after the capture still works.
        common.check_torch_io(kilnrt, {model: engine}, torch, batches=(2,), tag=" after capture", use_out=False)
    r.note("graph captured and replayed x3 per model")


common.main(run)
