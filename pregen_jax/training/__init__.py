"""What every trained model shares: the fit loop (``loop``: epochs, early stopping, snapshots,
checkpoints, resume, progress) and its single-file atomic ``checkpoints``. Below the models
(``captioning``, ``reo``, the shapes image encoder), so that each of them can use it."""
from .loop import Fitted, Schedule, Task, fit

__all__ = ["Fitted", "Schedule", "Task", "fit"]
