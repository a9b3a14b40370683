from speedpatch.targets.nki.emulator.isa import *  # noqa: F401, F403


def __getattr__(name):
    from speedpatch.targets.nki.emulator.language import not_emulated

    raise not_emulated("nisa", name)
