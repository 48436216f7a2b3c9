
from typing import Hashable


class RecentSet:
    """
    The keys given most recently, at most `limit` (>= 2): two generations of `limit // 2` keys,
    the older dropped whole when the newer is full. A key is found if fewer than `limit // 2`
    others were given since it was last given; a key never given is never found.
    """

    def __init__(self, limit: int) -> None:
        if limit < 2:
            raise ValueError(f"RecentSet: limit must be >= 2, got {limit}")
        self.generation = limit // 2
        self._newer: set = set()
        self._older: set = set()
        self.forgotten = 0  # keys dropped with an older generation

    def __len__(self) -> int:
        return len(self._newer) + len(self._older)

    def seen(self, key: Hashable) -> bool:
        """Whether `key` is held; it is held (in the newer generation) afterwards either way."""
        if key in self._newer:
            return True
        found = key in self._older
        if found:
            self._older.discard(key)
        if len(self._newer) >= self.generation:
            self.forgotten += len(self._older)
            self._older, self._newer = self._newer, set()
        self._newer.add(key)
        return found
