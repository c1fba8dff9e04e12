"""doors/shell/_command.py's ChannelBody and the framer's binary data frames: a frame's bytes reach the response as
the very object read from the pipe (not joined with its header line), small frames are still joined, order holds."""

from __future__ import annotations

import trio

from doors.shell._command import LARGE_PART, ChannelBody
from doors.shell._output import Frame, Framer
from doors.shell._wire import FrameReader


def test_a_binary_data_frame_is_its_header_line_and_the_bytes_read_not_a_copy() -> None:
    data = bytes(range(256)) * 1024
    frame = Framer(1 << 30, binary=True).output_frame("stdout", data)
    assert isinstance(frame, tuple) and frame[1] is data
    assert frame[0] == b'{"seq":1,"stream":"stdout","length":262144}\n'


def test_ndjson_frames_stay_one_line() -> None:
    assert isinstance(Framer(1 << 20).output_frame("stdout", b"x" * LARGE_PART), bytes)


async def _body(frames: list[Frame]) -> list[bytes]:
    send, receive = trio.open_memory_channel[Frame](len(frames))
    for frame in frames:
        send.send_nowait(frame)
    send.close()
    return [piece async for piece in ChannelBody(receive, lambda: None)]


async def test_a_large_part_goes_out_alone_as_it_is_and_small_ones_are_joined() -> None:
    framer = Framer(1 << 30, binary=True)
    big = b"b" * LARGE_PART
    frames = [framer.started("c1", 7), framer.output_frame("stdout", b"small"), framer.output_frame("stderr", big),
              framer.output_frame("stdout", b"after")]
    pieces = await _body(frames)
    assert any(piece is big for piece in pieces)  # not copied into a join
    assert len(pieces) == 3  # started + the small frame + the big frame's header; the big bytes; the last frame
    read = FrameReader(binary=True).feed(b"".join(pieces))
    assert [f.get("data") for f in read] == [None, b"small", big, b"after"]
    assert [f["seq"] for f in read] == [1, 2, 3, 4]
