"""The Positions lesson in real Chromium (issue 58): from the click on "Compare the twins" to every figure of the
lesson drawn (its four plots hold the new twins' names, then two animation frames: pixels on screen), for two and
for four twins at 32 tokens, on the app as ``python app.py`` serves it. Runs alternate between two sets of twins of
the same size, so each click draws new figures as a person's does. Medians of --repeat; target <= 1 s.

No tool offers same-size encoders that differ only in their position scheme, so there is no peer to set beside it.

    python benchmarks/bench_lesson.py [--repeat 10] [--write]
"""
from __future__ import annotations

import argparse
import statistics

from bench_browser import opened_app, server_lab, text_of
from sections import run_recorded

SETS = {2: (("twin-learned", "twin-rotary"), ("twin-sinusoidal", "twin-alibi")),
        4: (("twin-learned", "twin-rotary", "twin-none", "twin-alibi"),
            ("twin-sinusoidal", "twin-relative", "twin-disentangled", "twin-none"))}
PLOTS = ("#lesson-maps", "#lesson-distance", "#lesson-shuffle", "#lesson-lengths")
# Click, then wait until every plot names the new set's first twin and none names the old set's first twin.
CLICK_TO_DRAWN = f"""async ([want, avoid]) => {{
  const plots = {list(PLOTS)!r};
  const ready = () => plots.every(id => {{
    const text = document.querySelector(id)?.textContent || '';
    return text.includes(want) && !text.includes(avoid);
  }});
  return await new Promise(resolve => {{
    const t0 = performance.now();
    const drawn = () => requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - t0)));
    const watch = new MutationObserver(() => {{ if (ready()) {{ watch.disconnect(); drawn(); }} }});
    watch.observe(document.body, {{subtree: true, childList: true, characterData: true}});
    document.querySelector('#lesson-btn').click();
  }});
}}"""


def choose(page, twins) -> None:
    for box in page.locator("#lesson-twins input[type=checkbox]").all():
        name = box.evaluate("b => b.closest('label').innerText.trim()")
        if box.is_checked() != (name in twins):
            box.click()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args()
    if args.repeat % 2:  # each set of twins must end on the set the next one's first click replaces
        parser.error("--repeat must be even: the runs alternate between two sets of twins")
    lab = server_lab()
    text = text_of(lab, args.tokens).replace("the", "[MASK]", 1)  # one [MASK]: the shuffle demonstration's word
    assert len(lab.tokenizer.encode(text).ids) == args.tokens, len(lab.tokenizer.encode(text).ids)
    with opened_app(lab) as page:
        page.get_by_role("tab", name="Positions").click()
        page.fill("#lesson-text textarea", text)
        print(f"{args.tokens} tokens: {text!r}; medians of {args.repeat} clicks after 2 warm-up clicks\n")
        print("| twins | click -> every figure drawn (median) | fastest | slowest | target |")
        print("|---|---|---|---|---|")
        for k, (first, second) in SETS.items():
            times = []
            for i in range(args.repeat + 2):
                new, old = (first, second) if i % 2 == 0 else (second, first)
                choose(page, new)
                ms = page.evaluate(CLICK_TO_DRAWN, [new[0], old[0]])
                if i >= 2:
                    times.append(ms)
            print(f"| {k} | {statistics.median(times):.0f} ms | {min(times):.0f} ms | {max(times):.0f} ms | "
                  "<= 1000 ms |")


if __name__ == "__main__":
    run_recorded("lesson", "The Positions lesson in Chromium (issue 58)", __doc__, main)
