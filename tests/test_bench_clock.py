"""The benchmarks' clock of "pixels on screen" (benchmarks/bench_browser.py DRAWN), in Chromium on an empty
page: it stops at the second animation frame that begins after the task that drew, and its comparison stop
(the clock before 2026-12-04, which polled once per frame) one frame after that. Frames are counted by a
requestAnimationFrame loop registered first, so in each frame its callback runs before the clock's."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
bench_browser = pytest.importorskip("bench_browser")

FRAMES_SINCE = """async ([drawn, alreadyDrawn]) => {
  const el = document.createElement('div');
  document.body.appendChild(el);
  const starts = [];  // performance.now() in each frame, before any other callback of that frame
  (function loop() { starts.push(performance.now()); requestAnimationFrame(loop); })();
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  let drewAt = 0, framesBefore = 0;
  const draw = () => { drewAt = performance.now(); framesBefore = starts.length; el.setAttribute('data-draws', '1'); };
  if (alreadyDrawn) { draw(); }
  const clock = (eval(drawn))(el, 0);
  if (!alreadyDrawn) { setTimeout(draw, 0); }  // a task between frames, as a server reply's is
  el.setAttribute('data-other', 'x');  // another attribute: not a draw
  const [pixels, later] = await clock;
  const begun = t => starts.slice(framesBefore).filter(s => s <= t).length;  // frames begun since the draw, by t
  return [begun(pixels), begun(later), pixels > drewAt];
}"""


@pytest.mark.parametrize("already_drawn", [False, True], ids=["drawn-after-the-call", "drawn-before-the-call"])
def test_pixels_are_the_second_frame_after_the_draw_and_the_old_clock_one_frame_later(browser, already_drawn):
    page = browser.new_page()
    try:
        page.set_content("<html><body></body></html>")
        frames_to_pixels, frames_to_later, after_draw = page.evaluate(FRAMES_SINCE,
                                                                      [bench_browser.DRAWN, already_drawn])
    finally:
        page.close()
    assert after_draw
    assert frames_to_pixels == 2  # the frame that paints the draw, then the next: its paint is done
    assert frames_to_later == 3  # polling once per frame noticed the draw a frame late
