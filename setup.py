"""The one compiled module: the ingest's inner loops (core/rules/compiled.py says why). Optional:
where no C compiler is found the install goes on without it and the Python loops run."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("core.rules._fastpath", ["core/rules/_fastpath.c"], optional=True)])
