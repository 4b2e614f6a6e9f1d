"""Puts libposenc into the package: the file named by POSENC_LIBRARY, else
the build tree's (../build/src/libposenc.so, after the CMake build). The
wheel is then specific to this platform, as the library is."""
import os
import shutil

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_TREE_LIBRARY = os.path.join(HERE, "..", "build", "src", "libposenc.so")


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # the sources run in place, and find the library as they do (posenc/_lib.py)
        library = os.environ.get("POSENC_LIBRARY") or BUILD_TREE_LIBRARY
        if not os.path.isfile(library):
            raise SystemExit(f"posenc: no libposenc at {library}: build it first "
                             "(cmake), or set POSENC_LIBRARY to its path")
        # The real file, not the symlink: the package's copy is found by name.
        shutil.copyfile(os.path.realpath(library),
                        os.path.join(self.build_lib, "posenc", "libposenc.so"))


class PlatformDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=PlatformDistribution)
