#!/usr/bin/env python3
"""Write runfile.h from the run file's one definition, profiler/runfile.py.

    genformat.py PATH/TO/profiler/runfile.py OUT.h"""
import importlib.util
import sys

spec = importlib.util.spec_from_file_location("runfile", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
with open(sys.argv[2], "w") as f:
    f.write(mod.c_header())
