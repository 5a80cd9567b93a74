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
