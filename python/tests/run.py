"""meson test's entry to the Python module's tests: pytest on this folder,
exit 77 (skipped) when the module was not built or pytest is missing."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
try:
    import pytest
    import kiln  # noqa: F401  (the module meson built, on PYTHONPATH)
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", here] + sys.argv[1:]))
