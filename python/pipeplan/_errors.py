"""The exceptions of pipeplan. Their messages are the CLI's (`pipeplan ... ` prints them after
``error:``); which class is raised follows the CLI's exit code: 2 (bad input) raises
:class:`InstanceError` or :class:`UnsupportedError`, 1 (no plan) raises :class:`InfeasibleError`,
:class:`TimeLimitError` or :class:`SolverError`."""


class PipeplanError(Exception):
    """Base class of every pipeplan error."""


class InstanceError(PipeplanError, ValueError):
    """Bad input: an instance, plan or profile that cannot be read or breaks a rule of its format,
    or a bad option (unknown algorithm or setting, bad quantity, stage count). The message names
    the file and field, as the CLI's does."""


class UnsupportedError(InstanceError):
    """The algorithm does not handle this instance (e.g. Galvatron on a GPU count that is not a
    power of two), or a runtime cannot run the plan given to :func:`pipeplan.export`; the message
    says why."""


class InfeasibleError(PipeplanError):
    """No feasible plan exists, or the algorithm found none; the message names the binding
    constraint (typically memory)."""


class TimeLimitError(InfeasibleError, TimeoutError):
    """The time limit passed before the algorithm found any feasible plan."""


class SolverError(PipeplanError, RuntimeError):
    """The underlying solver failed (a bug of pipeplan or of HiGHS; please report it)."""
