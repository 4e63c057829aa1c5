"""kilnrt.Error: every failure of the native library reaches Python as this exception."""


class Error(RuntimeError):
    """A kilnrt failure.

    Attributes:
        code: what kind of failure: "invalid_argument", "invalid_model", "unsupported", "invalid_engine", "io",
            "cuda", "out_of_memory" or "internal".
        where: the node / tensor / file the error concerns ("" if none).
        message: the plain message, without location.
        expression: the failing check or call inside kilnrt ("" if none).
    """

    def __init__(self, what, code="internal", where="", message=None, expression=""):
        super().__init__(what)
        self.code = code
        self.where = where
        self.message = what if message is None else message
        self.expression = expression
