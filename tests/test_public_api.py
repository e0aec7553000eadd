"""The public surface is what corral.__all__ says, sorted."""

from __future__ import annotations

import corral


def test_all_is_sorted_and_importable() -> None:
    names = [n for n in corral.__all__ if n != "__version__"]
    assert names == sorted(names, key=lambda n: (n[0].islower(), n))
    for name in corral.__all__:
        assert hasattr(corral, name), name


def test_py_typed_is_shipped() -> None:
    from importlib.resources import files

    assert files("corral").joinpath("py.typed").is_file()
