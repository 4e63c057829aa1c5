"""multiprocessing and CUDA (argv[1]):
  before: fork before any GPU use in the parent: the child builds nothing, loads the CUDA engine, runs it correctly;
          the parent uses the GPU afterwards.
  after:  fork after the parent used the GPU: in the child kilnrt's GPU entries raise kilnrt's clear error (it
          names fork and the 'spawn' start method), the child exits cleanly; the parent is unaffected.
  spawn:  the parent uses the GPU, a 'spawn' child loads and runs the engine correctly."""
import multiprocessing as mp
import sys
import traceback

import common

MODEL = "transformer_encoder_layer"


def child_gpu_work(q):
    try:
        import kilnrt
        engine = common.load_engine(kilnrt, MODEL)
        x = common.fixture_input(MODEL, 2)
        y = common.kcall("child engine(x)", engine, x)
        rel, cos = common.check_close(y, common.reference(MODEL, x), "child")
        q.put(("ok", "rel err %.2g cos %.7f" % (rel, cos)))
    except BaseException as e:  # noqa: BLE001
        q.put(("error", "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc())))


def child_expect_error(q, engine):
    import kilnrt
    seen = []
    x = common.fixture_input(MODEL, 2)
    for what, fn in (("engine(x) inherited", lambda: engine(x)),
                     ("Engine(path) new", lambda: kilnrt.Engine(common.engine_path(MODEL, "cuda")))):
        try:
            fn()
            seen.append((what, "no error"))
        except kilnrt.Error as e:
            seen.append((what, str(e)))
        except BaseException as e:  # noqa: BLE001
            seen.append((what, "%s: %s" % (type(e).__name__, e)))
    q.put(seen)


def wait(p, q, label, timeout=150):
    p.join(timeout)
    if p.is_alive():
        p.kill()
        raise AssertionError("%s child hung (killed after %d s)" % (label, timeout))
    if q.empty():
        raise AssertionError("%s child sent no result (exit code %s)" % (label, p.exitcode))
    return q.get()


def run(r):
    mode = sys.argv[1]
    import kilnrt
    if mode == "before":
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=child_gpu_work, args=(q,))
        p.start()
        status, text = wait(p, q, "fork-before-GPU")
        if status != "ok":
            raise AssertionError("child failed: " + text)
        if p.exitcode != 0:
            raise AssertionError("child exit code %s" % p.exitcode)
        r.note("child: " + text)
        engines = {MODEL: common.load_engine(kilnrt, MODEL)}
        common.check_numpy_io(kilnrt, engines, tag=" parent after child")
    elif mode == "after":
        engine = common.load_engine(kilnrt, MODEL)
        common.check_numpy_io(kilnrt, {MODEL: engine}, tag=" parent before fork")
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=child_expect_error, args=(q, engine))
        p.start()
        seen = wait(p, q, "fork-after-GPU")
        for what, text in seen:
            if "fork" not in text.lower() or "spawn" not in text.lower():
                raise AssertionError("child %s: expected kilnrt's clear fork error, got: %s" % (what, text[:300]))
        if p.exitcode != 0:
            raise AssertionError("child exit code %s" % p.exitcode)
        r.note("child error: " + seen[0][1].splitlines()[0][:140])
        common.check_numpy_io(kilnrt, {MODEL: engine}, tag=" parent after fork")
        common.check_numpy_io(kilnrt, {MODEL: common.load_engine(kilnrt, MODEL)}, tag=" parent new engine")
    elif mode == "spawn":
        engine = common.load_engine(kilnrt, MODEL)
        common.check_numpy_io(kilnrt, {MODEL: engine}, tag=" parent")
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        p = ctx.Process(target=child_gpu_work, args=(q,))
        p.start()
        status, text = wait(p, q, "spawn")
        if status != "ok" or p.exitcode != 0:
            raise AssertionError("spawn child: %s (exit %s)" % (text, p.exitcode))
        r.note("spawn child: " + text)
        common.check_numpy_io(kilnrt, {MODEL: engine}, tag=" parent after child")
    else:
        raise SystemExit("mode: before | after | spawn")


if __name__ == "__main__":
    common.main(run)
