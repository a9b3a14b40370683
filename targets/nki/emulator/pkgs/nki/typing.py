"""nki.typing: kernel argument annotations (tensor[shape, dtype], mutable_tensor, scalar). The emulator
accepts them and checks nothing at annotation time; the values a kernel receives are what it checks."""


class _Annotation:
    def __init__(self, name, args=()):
        self._name = name
        self._args = args

    def __getitem__(self, args):
        return _Annotation(self._name, args if isinstance(args, tuple) else (args,))

    def __call__(self, *args, **kwargs):
        return _Annotation(self._name, args)

    def __repr__(self):
        return f"nki.typing.{self._name}{list(self._args) if self._args else ''}"


tensor = _Annotation("tensor")
mutable_tensor = _Annotation("mutable_tensor")
scalar = _Annotation("scalar")
