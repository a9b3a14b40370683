from nki.compiler import *  # noqa: F401, F403
from nki.compiler import no_reorder, psum, sbuf, skip_middle_end_transformations  # noqa: F401
