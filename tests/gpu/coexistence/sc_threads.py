"""8 threads on one engine per model: each thread runs numpy I/O and (with the interop) torch tensors on its own
torch stream — kilnrt gives each caller stream its own execution context — 10 rounds; every call leaves the
thread's context state as it was (new threads start with none current) and every output matches the CPU engine."""
import threading

import common

THREADS, ROUNDS = 8, 10


def run(r):
    import torch
    import kilnrt
    engines = {m: common.load_engine(kilnrt, m) for m in common.MODELS}
    interop = common.torch_interop(kilnrt, engines, torch)
    for m in common.MODELS:  # references computed up front (the CPU engine is not what is being tested)
        for b in (1, 2, 3):
            common.reference(m, common.fixture_input(m, b))
    errors = []
    barrier = threading.Barrier(THREADS)

    def worker(i):
        try:
            stream = torch.cuda.Stream() if interop else None
            barrier.wait(60)
            for k in range(ROUNDS):
                b = 1 + (i + k) % 3
                common.check_numpy_io(kilnrt, engines, batches=(b,), tag=" thread %d" % i)
                if interop:
                    with torch.cuda.stream(stream):
                        common.check_torch_io(kilnrt, engines, torch, batches=(b,), tag=" thread %d" % i,
                                              use_out=(k % 2 == 0))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    if any(t.is_alive() for t in threads):
        raise AssertionError("a worker thread did not finish (hang)")
    if errors:
        raise errors[0]
    r.note("%d threads x %d rounds x %d models" % (THREADS, ROUNDS, len(engines)))


common.main(run)
