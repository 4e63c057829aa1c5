"""kilnrt.Error: every failure of the native library reaches Python as this exception."""


class Error(RuntimeError):
    """A kilnrt failure.

    str(error) is one readable line, "kilnrt <code> [<where>]: <message>"; with the environment variable
    KILNRT_LOG_LEVEL=debug set when the error was raised, the detail follows in parentheses.

    Attributes:
        code: what kind of failure: "invalid_argument", "invalid_model", "unsupported", "invalid_engine", "io",
            "cuda", "out_of_memory" or "internal".
        where: the node / tensor / file the error concerns ("" if none).
        message: the plain message, without location.
        expression: the failing check or call inside kilnrt ("" if none).
        detail: the failing check and its source location inside kilnrt, e.g.
            "check 'fd >= 0' failed at src/engine/file_bytes.cc:17" ("" if none).
    """

    def __init__(self, what, code="internal", where="", message=None, expression="", detail=""):
        super().__init__(what)
        self.code = code
        self.where = where
        self.message = what if message is None else message
        self.expression = expression
        self.detail = detail
