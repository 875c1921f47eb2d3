"""The attention-source registry: one record per source, everything reads it, and rollout and flow
are sources like the others (per layer, aggregated from the input up)."""
import numpy as np
import pytest

from bertviz_lab.attention.sources import SOURCES, get_source, layer_matrices, source_names, with_source
from bertviz_lab.bert.sources.flow import attention_flow, rollout

TEXT = "the cat sat on the mat"


def test_every_source_is_one_complete_record():
    assert source_names() == ("attention", "norm", "norm-residual", "globenc", "alti", "value-zeroing", "decompx",
                              "rollout", "flow")
    for name, source in SOURCES.items():
        assert source.name == name and source.label and source.note and source.cost
        assert "20" in source.citation, f"{name}: the citation names a paper and its year"
        assert (source.heads is None) == source.per_layer, name
        assert not source.aggregated or source.residual_included, f"{name}: aggregated implies the residual is in"


def test_an_unknown_source_is_one_sentence_naming_the_others():
    with pytest.raises(ValueError, match=r"^unknown attention source 'nrom'; choose one of attention, norm, .*flow$"):
        get_source("nrom")


def test_rollout_source_is_abnar_and_zuidemas_rollout_up_to_each_layer(tiny_lab):
    analysis = tiny_lab.analyze(TEXT)
    expected = rollout(analysis.attention.mean(1))  # (layers, query, key), identity added
    np.testing.assert_allclose(layer_matrices(tiny_lab, analysis, "rollout"), expected, atol=1e-6)
    shown = with_source(tiny_lab, analysis, "rollout").attention  # (layers, heads, query, key)
    assert shown.shape == analysis.attention.shape
    np.testing.assert_allclose(shown[:, -1], expected, atol=1e-6)
    np.testing.assert_allclose(shown.sum(-1), 1.0, atol=1e-5)


def test_flow_source_is_the_max_flow_up_to_each_layer(tiny_lab):
    analysis = tiny_lab.analyze(TEXT)
    means = analysis.attention.mean(1)
    flows = layer_matrices(tiny_lab, analysis, "flow")
    for layer in range(analysis.n_layers):
        np.testing.assert_allclose(flows[layer], attention_flow(means, up_to=layer), atol=1e-6)
    assert not np.allclose(flows[-1], rollout(means)[-1], atol=1e-3), "flow is not rollout"


def test_aggregated_sources_are_not_rolled_out_twice():
    layers = np.random.default_rng(0).random((3, 4, 4))
    for name in ("rollout", "flow", "decompx"):
        rolled = get_source(name).rollout(layers)
        np.testing.assert_allclose(rolled, layers / layers.sum(-1, keepdims=True), atol=1e-6)
    np.testing.assert_allclose(get_source("attention").rollout(layers), rollout(layers), atol=1e-6)
    np.testing.assert_allclose(get_source("alti").rollout(layers), rollout(layers, residual=False), atol=1e-6)


def test_a_per_layer_source_sends_one_matrix_per_layer_in_json(tiny_lab):
    analysis = with_source(tiny_lab, tiny_lab.analyze(TEXT), "rollout")
    assert analysis.to_json(attention=False)["attention_shape"] == [analysis.n_layers, 1, 8, 8]


def test_a_checkpoint_is_never_called_a_source(tiny_folder, tiny_lab):
    """Before issue 42 a checkpoint was called a source; the old keyword and attributes are gone (issue 57), so a
    source is only a kind of token-to-token weight."""
    import bertviz_lab
    import bertviz_lab.bert as bert
    import bertviz_lab.syntax.run as syntax_run

    with pytest.raises(TypeError, match="source"):
        bertviz_lab.load(source=str(tiny_folder), device="cpu")
    info = tiny_lab.checkpoint_info()
    assert info.checkpoint == tiny_lab.checkpoint_id and "[checkpoint " in info.describe()
    for thing, old in ((tiny_lab, "source"), (info, "source"), (tiny_lab.checkpoint, "mlm_head_source"),
                       (bert, "DEFAULT_SOURCE"), (bert, "ORIGINAL_SOURCE"), (syntax_run, "attention_weights_source")):
        assert not hasattr(thing, old), old
    assert syntax_run.published_checkpoint("default") == "minilm-original"


def test_patching_names_its_donor_only(sharp_lab):
    from bertviz_lab.interventions.sweeps import patching_sweep

    result = patching_sweep(sharp_lab, "the big cat [MASK] on the mat", "the big dog [MASK] on the mat", "the", "mat")
    assert not hasattr(result, "source") and result.heads.shape == (sharp_lab.n_layers, sharp_lab.n_heads)


def test_the_aggregates_view_names_each_sources_layer_matrix(tiny_lab):
    """The second panel says what its matrix is: the head mean for attention, a norm for norm, the
    source up to the layer for an aggregated one (rollout is not a 'norm of layer')."""
    from bertviz_lab.figures.analysis import ViewOptions, aggregates

    analysis = tiny_lab.analyze(TEXT)
    titles = {}
    for name in ("attention", "norm", "alti", "rollout"):
        shown = with_source(tiny_lab, analysis, name)
        fig = aggregates(shown, ViewOptions(layer=1), layer_matrices(tiny_lab, analysis, name))
        titles[name] = [a["text"] for a in fig["layout"]["annotations"]][1]
    assert titles == {"attention": "<b>mean of layer 2</b>", "norm": "<b>norm of layer 2</b>",
                      "alti": "<b>alti, layer 2</b>", "rollout": "<b>rollout up to layer 2</b>"}


@pytest.mark.parametrize("source", ["norm", "rollout", "alti"])
def test_switching_source_is_one_forward_pass_and_equals_the_two_calls(tiny_lab, source, monkeypatch):
    """What the page runs when a visitor switches source: the converted analysis and the per-layer matrices from one
    pass of the input (issue 57: was two), the same numbers as with_source and layer_matrices give apart."""
    from bertviz_lab.attention.sources import in_source

    analysis = tiny_lab.analyze(TEXT)
    passes = []
    run = tiny_lab.run
    monkeypatch.setattr(tiny_lab, "run", lambda *a, **k: passes.append(1) or run(*a, **k))
    shown, layers = in_source(tiny_lab, analysis, source)
    assert len(passes) == 1
    np.testing.assert_array_equal(shown.attention, with_source(tiny_lab, analysis, source).attention)
    np.testing.assert_array_equal(layers, layer_matrices(tiny_lab, analysis, source))
    assert len(passes) == 3 and shown.source == source
