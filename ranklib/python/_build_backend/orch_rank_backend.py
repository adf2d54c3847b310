"""setuptools' PEP 517 backend, run on a copy of this directory.

setuptools builds in the source tree: `pip install ranklib/python` would leave build/ and
orch_rank.egg-info in the user's checkout (or in orch's). Every hook that builds here copies the
sources to a temporary directory first and builds there; pip's output directories are absolute,
so the wheel and its metadata land where pip asked. An editable install builds in place, as it
must (its point is the source tree).
"""
import os
import shutil
import tempfile

from setuptools import build_meta as _setuptools

_SKIP = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "dist")


def _in_copy(hook):
    def run(*args, **kwargs):
        here = os.getcwd()
        with tempfile.TemporaryDirectory(prefix="orch-rank-build-") as tmp:
            copy = os.path.join(tmp, "src")
            shutil.copytree(here, copy, ignore=_SKIP)
            os.chdir(copy)
            try:
                return hook(*args, **kwargs)
            finally:
                os.chdir(here)

    run.__name__ = hook.__name__
    return run


get_requires_for_build_wheel = _setuptools.get_requires_for_build_wheel
get_requires_for_build_sdist = _setuptools.get_requires_for_build_sdist
prepare_metadata_for_build_wheel = _in_copy(_setuptools.prepare_metadata_for_build_wheel)
build_wheel = _in_copy(_setuptools.build_wheel)
build_sdist = _in_copy(_setuptools.build_sdist)

# PEP 660 hooks, in place, where this setuptools has them (a hook set to None would be called).
for _name in ("get_requires_for_build_editable", "prepare_metadata_for_build_editable", "build_editable"):
    if hasattr(_setuptools, _name):
        globals()[_name] = getattr(_setuptools, _name)
