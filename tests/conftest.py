import sys
from pathlib import Path

HERE = Path(__file__).parent
for folder in (HERE / "toy", HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
