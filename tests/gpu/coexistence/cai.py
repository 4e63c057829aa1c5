"""A minimal __cuda_array_interface__ (v3) object around a raw device pointer, for memory that comes neither from
torch nor cupy (cuda-python's cudaMalloc, a user context's cuMemAlloc)."""


class DevArray:
    def __init__(self, ptr, shape, stream=None, typestr="<f4"):
        self.ptr = int(ptr)
        self.shape = tuple(int(d) for d in shape)
        self.stream = stream
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": typestr, "data": (self.ptr, False),
                                         "strides": None, "version": 3}
        if stream is not None:
            self.__cuda_array_interface__["stream"] = int(stream)

    @property
    def nbytes(self):
        n = 4
        for d in self.shape:
            n *= d
        return n
