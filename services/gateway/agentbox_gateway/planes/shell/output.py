"""Command output kept in bounded memory and cut for answers, addressable by character offsets."""

#: Results are cut to this many characters, keeping the head and the tail (AIO: 30,000).
OUTPUT_LIMIT = 30_000
#: Characters kept of each stream of each command, at the start and at the end (the middle is dropped).
STREAM_KEEP = 256_000


def truncation_marker(omitted: int) -> str:
    return f"\n\n[... {omitted} characters truncated ...]\n\n"


def truncate_middle(text: str, limit: int | None) -> str:
    """Keep the first and last ``limit / 2`` characters of ``text`` (``None`` or 0: no limit)."""
    if not limit or len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return text[:head] + truncation_marker(len(text) - limit) + text[len(text) - tail :]


class OutputBuffer:
    """One output stream of one command, addressable by absolute character offsets.

    Only the first ``keep`` characters and the last ``keep`` to ``2 * keep`` are retained, so a
    command printing gigabytes cannot exhaust the gateway's memory; reads across the dropped middle
    show a marker."""

    def __init__(self, keep: int = STREAM_KEEP) -> None:
        self._keep = keep
        self._head: list[str] = []
        self._head_len = 0
        self._tail: list[str] = []
        self._tail_len = 0
        self.total = 0

    def append(self, text: str) -> None:
        if not text:
            return
        self.total += len(text)
        room = self._keep - self._head_len
        if room > 0:
            part = text[:room]
            self._head.append(part)
            self._head_len += len(part)
            text = text[room:]
        if text:
            self._tail.append(text)
            self._tail_len += len(text)
            if self._tail_len > 2 * self._keep:
                kept = "".join(self._tail)[-self._keep :]
                self._tail = [kept]
                self._tail_len = len(kept)

    @property
    def retained(self) -> int:
        """Characters held in memory (the kept head and tail)."""
        return self._head_len + self._tail_len

    @property
    def dropped(self) -> int:
        return self.total - self._head_len - self._tail_len

    def _parts(self) -> tuple[str, str]:
        head = "".join(self._head)
        tail = "".join(self._tail)
        self._head, self._tail = [head], [tail]
        return head, tail

    def read(self, offset: int = 0) -> str:
        """Everything from ``offset`` (as returned in an earlier ``total``) to the end."""
        head, tail = self._parts()
        offset = max(0, offset)
        tail_start = self.total - self._tail_len
        if offset >= tail_start:
            return tail[offset - tail_start :]
        gap = truncation_marker(self.dropped) if self.dropped else ""
        return (head[offset:] if offset < self._head_len else "") + gap + tail

    def text(self, limit: int | None = None) -> str:
        """The whole stream, cut to ``limit`` characters (head and tail kept) when given."""
        head, tail = self._parts()
        if not self.dropped:
            return truncate_middle(head + tail, limit)
        if not limit or limit >= len(head) + len(tail):
            return head + truncation_marker(self.dropped) + tail
        first = head[: limit // 2]
        last = tail[max(0, len(tail) - (limit - len(first))) :]
        return first + truncation_marker(self.total - len(first) - len(last)) + last
