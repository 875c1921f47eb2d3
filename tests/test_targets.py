"""Targets are judged by the 95% Wilson interval of the counts, not by the point estimate (mlm/targets.py)."""
from bertviz_lab.mlm.evaluate import wilson_interval
from bertviz_lab.mlm.targets import ISSUE_32_TARGETS, Target, target_sentence, verdict


def test_a_point_estimate_on_the_target_is_undecided_not_reached():
    # 35/100 = 0.35 exactly: a reading by the point estimate says "reached"; the interval [0.264, 0.447] says undecided
    assert verdict(35, 100, 0.35) == "undecided"
    # 420/1000 = 0.42: interval [0.390, 0.451], wholly above 0.38
    assert verdict(420, 1000, 0.38) == "reached"
    # 315/1000 = 0.315: interval [0.287, 0.344], wholly below 0.35, though 0.35 is "only 0.035 away"
    low, high = wilson_interval(315, 1000)
    assert round(low, 3) == 0.287 and round(high, 3) == 0.344
    assert verdict(315, 1000, 0.35) == "missed"
    # 19 of 42 teaching sentences = 0.452 < 0.5, yet the interval [0.312, 0.601] contains 0.5
    assert verdict(19, 42, 0.50) == "undecided"


def test_the_sentence_carries_counts_interval_and_verdict():
    line = target_sentence("chain step 900", Target("teaching set top-5", "teaching_top5", 0.80), 32, 42)
    assert line == ("chain step 900: teaching set top-5 32/42 = 0.762 [95% CI 0.615, 0.865] is undecided against "
                    "the 0.80 target (the interval contains it)")
    assert "misses the 0.35 target" in target_sentence("h", ISSUE_32_TARGETS[0], 315, 1000)


def test_the_issue_targets_are_the_issue_s_figures():
    assert {t.key: t.at_least for t in ISSUE_32_TARGETS} == {
        "natural_top1": 0.35, "natural_top5": 0.55, "nsp": 0.88, "teaching_top1": 0.50, "teaching_top5": 0.80,
        "wordnet_top1": 0.38}
