"""The Positions tab in headless Chromium (issue 58), on the shipped twins: what a teacher sees after one click."""
import pytest
from test_app_browser import CONDITION_MS, open_app

from bertviz_lab.bert.loading.twin_checkpoints import twin_names


@pytest.mark.skipif(not twin_names(), reason="no twins shipped in this checkout")
def test_the_lesson_sets_the_chosen_twins_side_by_side(browser, tiny_app):
    page = open_app(browser, tiny_app, width=1400, height=1000)
    page.get_by_role("tab", name="Positions").click()
    for name in ("twin-learned", "twin-rotary", "twin-none"):  # the default choice
        assert page.get_by_label(name).is_checked()
    page.get_by_label("twin-rotary").uncheck()
    page.fill("#lesson-text textarea", "The student who reads every evening will [MASK] the exam in spring.")
    page.click("#lesson-btn")
    page.wait_for_function("document.querySelector('#lesson-message').innerText.includes('What shuffling')",
                           timeout=CONDITION_MS)
    message = page.locator("#lesson-message").inner_text()
    assert "twin-none: the prediction does not move when the other words are shuffled" in message
    assert "twin-learned: shuffling the other words moves the prediction" in message or \
        "twin-learned: the prediction does not move" in message  # whichever its interval supports, said once
    assert "twin-rotary" not in message
    page.wait_for_function("document.querySelectorAll('#lesson-shuffle .xtick text').length === 2",
                           timeout=CONDITION_MS)
    assert page.locator("#lesson-shuffle .xtick text").all_text_contents() == ["twin-learned", "twin-none"]
    titles = page.locator("#lesson-maps .annotation-text").all_text_contents()
    assert "twin-learned: L1 H1" in titles and "twin-none: no positions at all" in titles
    assert page.locator("#lesson-distance .legendtext").all_text_contents() == ["twin-learned", "twin-none"]
    assert "twin-learned cannot reach position 129 (2x, 4x)" in page.locator("#lesson-lengths .gtitle").text_content()
    page.close()
