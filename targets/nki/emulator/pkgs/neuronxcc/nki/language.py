from nki.language import *  # noqa: F401, F403
from nki.language import abs, copy, max, min, sum  # noqa: F401, A004
