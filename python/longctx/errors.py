"""Exceptions: one class per lc_status code, all under LongctxError, each carrying lc_last_error()'s text.

    LC_ERR_ARG     -> ArgumentError  (also a ValueError)
    LC_ERR_IO      -> IOFailure      (also an OSError)
    LC_ERR_FORMAT  -> FormatError    (also a ValueError)
    LC_ERR_NOMEM   -> OutOfMemory    (also a MemoryError)
    LC_ERR_NUMERIC -> NumericError   (also an ArithmeticError)

LongctxError itself (status 0) is raised by the package for problems found before any C call, such as a
library that cannot be found.
"""

LC_OK = 0
LC_ERR_ARG = 1
LC_ERR_IO = 2
LC_ERR_FORMAT = 3
LC_ERR_NOMEM = 4
LC_ERR_NUMERIC = 5


class LongctxError(Exception):
    """A failed longctx call. `status` is the lc_status code (0 when raised by Python code), `message`
    the library's one-line lc_last_error() text."""

    status_name = "error"

    def __init__(self, status, message):
        self.status = status
        self.message = message
        Exception.__init__(self, message)

    def __str__(self):
        return self.message


class ArgumentError(LongctxError, ValueError):
    """LC_ERR_ARG: an invalid argument or configuration."""

    status_name = "LC_ERR_ARG"


class IOFailure(LongctxError, OSError):
    """LC_ERR_IO: a file could not be opened, read, written or renamed."""

    status_name = "LC_ERR_IO"


class FormatError(LongctxError, ValueError):
    """LC_ERR_FORMAT: a file's contents are not what was expected (a damaged checkpoint)."""

    status_name = "LC_ERR_FORMAT"


class OutOfMemory(LongctxError, MemoryError):
    """LC_ERR_NOMEM: an allocation failed, or a plan does not fit in the machine's memory."""

    status_name = "LC_ERR_NOMEM"


class NumericError(LongctxError, ArithmeticError):
    """LC_ERR_NUMERIC: a value became NaN or infinite (training diverged)."""

    status_name = "LC_ERR_NUMERIC"


_BY_STATUS = {
    LC_ERR_ARG: ArgumentError,
    LC_ERR_IO: IOFailure,
    LC_ERR_FORMAT: FormatError,
    LC_ERR_NOMEM: OutOfMemory,
    LC_ERR_NUMERIC: NumericError,
}


def error_for(status, message):
    """The exception for an lc_status code and its message."""
    cls = _BY_STATUS.get(status, LongctxError)
    if not message:
        message = "longctx call failed with status %d" % status
    return cls(status, message)
