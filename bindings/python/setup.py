"""The package's build step beyond pyproject.toml: it writes braid/_build_hints.py into the built package,
naming where this checkout's libbraid is (its build/lib, and the directory of BRAID_LIBRARY when that is
set while building), so that `pip install ./bindings/python` into any interpreter finds the library
without BRAID_LIBRARY at run time. braid/_lib.py says the whole search order."""
import os

from setuptools import setup
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


setup(cmdclass={"build_py": BuildPyWithHints})
