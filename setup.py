"""Package discovery for the fixed layout: server/ -> speedpatch, targets/ -> speedpatch.targets,
menus/ -> speedpatch.menus. Every non-Python file inside a package folder (headers, C model sources,
menus, linker scripts...) ships as package data, so an installed wheel works on its own.
pyproject.toml holds everything else."""

import os

from setuptools import find_namespace_packages, setup

ROOTS = {"speedpatch": "server", "speedpatch.targets": "targets", "speedpatch.menus": "menus"}
SKIP_DIRS = {"__pycache__", "node_modules", ".pytest_cache"}
SKIP_SUFFIXES = (".py", ".pyc", ".o", ".so", ".a")


def _packages() -> dict[str, str]:
    found = {}
    for name, folder in ROOTS.items():
        found[name] = folder
        # every folder is a package (data folders such as include/ too), so nothing ships as a stray file
        for sub in find_namespace_packages(folder, exclude=["*__pycache__*"]):
            found[f"{name}.{sub}"] = os.path.join(folder, *sub.split("."))
    return found


def _data(folder: str, package_dirs: set[str]) -> list[str]:
    files = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and os.path.join(root, d) not in package_dirs]
        files += [os.path.relpath(os.path.join(root, n), folder) for n in names if not n.endswith(SKIP_SUFFIXES)]
    return files


PACKAGES = _packages()
setup(
    packages=list(PACKAGES),
    package_dir=ROOTS,
    package_data={name: _data(folder, set(PACKAGES.values()) - {folder}) for name, folder in PACKAGES.items()},
)
