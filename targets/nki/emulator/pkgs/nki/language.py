from speedpatch.targets.nki.emulator.language import *  # noqa: F401, F403
from speedpatch.targets.nki.emulator.language import abs, copy, max, min, sum  # noqa: F401, A004


def __getattr__(name):
    from speedpatch.targets.nki.emulator.language import not_emulated

    raise not_emulated("nl", name)
