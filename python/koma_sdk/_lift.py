"""Long strings put back: the core lifts strings of 4 KiB and more out of a
frame (so they are neither scanned twice nor parsed as JSON) and hands them
over as ready `str`s, each with where it goes."""

from typing import Any


def put_back(root: list[Any], entry: tuple[Any, ...]) -> None:
    """Put a lifted string back into parsed JSON: `entry` is `(index, *path, text)`,
    `index` its slot in `root`."""
    obj: Any = root
    last = len(entry) - 2
    for i in range(last):
        obj = obj[entry[i]]
    obj[entry[last]] = entry[-1]
