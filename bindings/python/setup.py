"""The package's build step beyond pyproject.toml:
- it writes braid/_build_hints.py into the built package, naming where this checkout's libbraid is (its
  build/lib, and the directory of BRAID_LIBRARY when that is set while building), so that
  `pip install ./bindings/python` into any interpreter finds the library without BRAID_LIBRARY at run
  time (braid/_lib.py says the whole search order);
- it compiles braid._fast (src/fast.c), the compiled per-op path, against abi/braid.h (this checkout's, or
  BRAID_INCLUDE_DIR's). The extension is optional: without a compiler, Python's headers or braid.h the
  package installs as it is and runs on ctypes alone (docs/PYTHON.md, "The compiled path")."""
import os

from setuptools import Extension, setup
from setuptools.command.build_py import build_py


class BuildPyWithHints(build_py):
    def run(self):
        super().run()
        here = os.path.dirname(os.path.abspath(__file__))
        dirs = []
        explicit = os.environ.get("BRAID_LIBRARY")
        if explicit:
            dirs.append(os.path.dirname(os.path.abspath(explicit)))
        dirs.append(os.path.normpath(os.path.join(here, "..", "..", "build", "lib")))
        target = os.path.join(self.build_lib, "braid", "_build_hints.py")
        with open(target, "w", encoding="utf-8") as f:
            f.write('"""Written by setup.py when the package was built: where libbraid was then."""\n')
            f.write(f"LIBRARY_DIRS = {dirs!r}\n")


def fast_extension():
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("BRAID_INCLUDE_DIR", ""), os.path.join(here, "..", "..", "abi")]
    include = next((d for d in candidates if d and os.path.exists(os.path.join(d, "braid.h"))), None)
    if include is None:
        return []
    return [Extension("braid._fast", [os.path.join("src", "fast.c")], include_dirs=[os.path.normpath(include)],
                      optional=True)]


setup(cmdclass={"build_py": BuildPyWithHints}, ext_modules=fast_extension())
