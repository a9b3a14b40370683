from speedpatch.targets.nki.emulator.isa import *  # noqa: F401, F403
