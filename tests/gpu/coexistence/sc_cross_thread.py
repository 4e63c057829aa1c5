"""An engine created on one thread (which then ends) and used on another: on the main thread and on a second
worker, numpy and torch I/O match the CPU engine; contexts unchanged."""
import threading

import common


def run(r):
    import torch
    import kilnrt
    made = {}
    errors = []

    def creator():
        try:
            for m in common.MODELS:
                made[m] = common.load_engine(kilnrt, m)
                common.check_numpy_io(kilnrt, {m: made[m]}, batches=(1,), tag=" creator thread")
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=creator)
    t.start()
    t.join(180)
    if errors:
        raise errors[0]
    if t.is_alive() or len(made) != len(common.MODELS):
        raise AssertionError("the creator thread did not finish")
    common.check_numpy_io(kilnrt, made, tag=" main thread")
    interop = common.torch_interop(kilnrt, made, torch)
    if interop:
        common.check_torch_io(kilnrt, made, torch, tag=" main thread")

    def user():
        try:
            common.check_numpy_io(kilnrt, made, tag=" other thread")
            if interop:
                common.check_torch_io(kilnrt, made, torch, tag=" other thread")
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    u = threading.Thread(target=user)
    u.start()
    u.join(180)
    if errors:
        raise errors[0]


common.main(run)
