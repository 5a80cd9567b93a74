"""Optional packages a command needs: a clear error with the pip line instead of an ImportError traceback."""
from __future__ import annotations

from tipcgen.core.errors import TipcgenError


def numpy_for(what: str) -> None:
    """The core install has no numpy; `tipcgen align` and `report --align DIR` read numpy files."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        raise TipcgenError(f"{what} needs numpy, which is not installed in this Python",
                           "pip install numpy  (or: pip install 'tipcgen[align]')") from None


def paddle_for(what: str, pin: str) -> None:
    """A command that writes Paddle's own files (paddle.save) needs paddle; looked up, not imported (1.5 s).
    pin: the requirement to name (words.PADDLE_PIN: core imports nothing of format/)."""
    import importlib.util

    if importlib.util.find_spec("paddle") is None:
        raise TipcgenError(f"{what} needs paddle, which is not installed in this Python",
                           f"pip install {pin}  (or: pip install 'tipcgen[paddle]')")
