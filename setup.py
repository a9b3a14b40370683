"""Package discovery for the fixed layout: server/ -> speedpatch, targets/ -> speedpatch.targets,
menus/ -> speedpatch.menus. pyproject.toml holds everything else."""

from setuptools import find_packages, setup

ROOTS = {"speedpatch": "server", "speedpatch.targets": "targets", "speedpatch.menus": "menus"}


def _packages() -> list[str]:
    found = []
    for name, folder in ROOTS.items():
        found.append(name)
        found += [f"{name}.{sub}" for sub in find_packages(folder)]
    return found


setup(packages=_packages(), package_dir=ROOTS)
