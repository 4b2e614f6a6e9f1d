"""The tests import the package from this source tree; the library is found
as posenc/_lib.py says (POSENC_LIBRARY, else the build tree beside it)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
