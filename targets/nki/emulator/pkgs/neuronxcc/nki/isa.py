from nki.isa import *  # noqa: F401, F403
