"""A NumPy emulator of the NKI programming model (tiles in HBM/SBUF/PSUM, nki.language, nki.isa) that
records every instruction into a Trace, whose list scheduler gives a modeled latency (costmodel.py).

The importable fakes `nki` / `neuronxcc.nki` live in pkgs/ and are put on sys.path only inside the
evaluation subprocess (runner.py --mode emulate), never in the user's own environment.
"""

import os

PKGS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pkgs")
