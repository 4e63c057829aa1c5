"""cupy next to kilnrt: arrays from cupy's default memory pool, work on a non-blocking cupy stream, and arrays from
cupy.cuda.MemoryAsyncPool (cudaMallocAsync, NULL owning context) fed to kilnrt; outputs match the CPU engine and
the context is unchanged by every call. Without kilnrt's cupy interop it falls back to numpy I/O (partial)."""
import common


def run(r):
    try:
        import cupy
    except ImportError as e:
        raise common.Skip("cupy is not installed: %s" % e)
    import kilnrt
    engines = {m: common.load_engine(kilnrt, m) for m in common.MODELS}

    def feed(tag):
        for model, engine in engines.items():
            x = common.fixture_input(model, 2)
            cx = cupy.asarray(x)
            try:
                y = common.kcall("%s cupy %s" % (model, tag), engine, cx)
            except common.ctxcheck.ContextChanged:
                raise
            except Exception as e:  # noqa: BLE001
                if common._interop_missing(e):
                    r.partial("cupy interop missing (%s: %s): numpy I/O only" % (type(e).__name__, str(e).splitlines()[0][:100]))
                    y = common.kcall("%s numpy %s" % (model, tag), engine, cupy.asnumpy(cx))
                else:
                    raise
            common.check_close(y, common.reference(model, x), "%s cupy %s" % (model, tag))
            if type(y).__module__.split(".")[0] == "cupy":
                ref = common.reference(model, x)
                out = cupy.full(ref.shape, cupy.nan, dtype=cupy.float32)
                try:
                    common.kcall("%s cupy out= %s" % (model, tag), engine, cx, out=out)
                    common.check_close(out, ref, "%s cupy out= %s" % (model, tag))
                except TypeError as e:
                    r.partial("engine(x, out=cupy array) not accepted: %s" % str(e).splitlines()[0][:100])

    a = cupy.random.rand(1 << 20, dtype=cupy.float32)  # cupy work first: cupy's context is the primary one
    float(a.sum())
    feed("default pool, default stream")
    with cupy.cuda.Stream(non_blocking=True):
        feed("non-blocking stream")
    if not hasattr(cupy.cuda, "MemoryAsyncPool"):
        raise common.Skip("cupy has no MemoryAsyncPool")
    pool = cupy.cuda.MemoryAsyncPool()
    cupy.cuda.set_allocator(pool.malloc)
    try:
        with cupy.cuda.Stream(non_blocking=True):
            feed("MemoryAsyncPool, non-blocking stream")
        feed("MemoryAsyncPool, default stream")
    finally:
        cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)
    r.note("cupy %s" % cupy.__version__)


common.main(run)
