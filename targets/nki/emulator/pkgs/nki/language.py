from speedpatch.targets.nki.emulator.language import *  # noqa: F401, F403
from speedpatch.targets.nki.emulator.language import abs, copy, max, min, sum  # noqa: F401, A004
