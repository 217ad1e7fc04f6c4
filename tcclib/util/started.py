"""When tcclib was imported in this process (the package imports this module first): every tcclib
module the process runs was read from its file after it, so a file last written before it is the
one running (what :mod:`tcclib.artifacts.own_code` tells an edit since the import by)."""

import time

IMPORTED_AT = time.time()
