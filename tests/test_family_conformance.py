"""Family conformance: the same checks on every encoder family (tests/family_cases.py), each a tiny random
transformers masked-LM model saved as a checkpoint folder:

- strict load from the folder, the config naming the architecture (position schemes, norm placement), and
  hidden-state, attention and MLM-logit parity with transformers (from the folder and from the model object);
- every hook point of HOOK_TABLE the family should have, plus exactly its own FAMILY_HOOKS, each captured;
- every attention source of the registry computes (finite, right-shaped) or refuses by name, saying why;
- every registered intervention runs through compare (what the CLI and the app call) or refuses with an
  InterventionError sentence, and exactly the family's own kinds run.

A new family is one FamilyCase in tests/family_cases.py plus its own small test file."""
import re
import shutil

import numpy as np
import pytest
import torch
from family_cases import CASES, LONG, MASKED, METHOD_NAMES, REFUSALS, parity

from bertviz_lab import load
from bertviz_lab.bert.encoder.hook_table import FAMILY_HOOKS, HOOK_TABLE, hook_name
from bertviz_lab.bert.loading.checkpoints import CheckpointError, model_from_transformers
from bertviz_lab.bert.loading.families import FAMILIES

pytestmark = pytest.mark.slow

FAMILY_CASES = [pytest.param(case, id=case.name) for case in CASES]
SHORT_SENTENCE = "the cat sat on the mat"
ROW_STOCHASTIC = {"attention", "alti", "value-zeroing", "rollout", "flow"}  # sources whose rows sum to 1


@pytest.fixture(scope="session")
def family_root(tmp_path_factory):
    return tmp_path_factory.mktemp("families")


def spot_names(spot, layers: int) -> set[str]:
    """Every name of one hook spot (HOOK_TABLE or FAMILY_HOOKS): one per layer, or its one name."""
    table = HOOK_TABLE if spot in HOOK_TABLE else FAMILY_HOOKS
    return {hook_name(spot, i) for i in range(layers)} if table[spot].per_layer else {hook_name(spot)}


def test_every_family_the_package_loads_has_a_case():
    assert sorted(case.model_type for case in CASES) == sorted(FAMILIES)
    assert len({case.name for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", FAMILY_CASES)
def test_loads_strictly_from_its_folder_and_the_config_names_the_architecture(case, family_root, tmp_path):
    from safetensors.torch import load_file, save_file

    built = case.build(family_root)
    lab = load(str(built.folder), device="cpu")
    cfg = lab.model.config
    assert cfg.model_type == case.model_type
    assert (cfg.positions, cfg.norm_placement) == (case.positions, case.norm_placement)
    assert lab.model.has_mlm_head and not lab.model.has_nsp_head and "set aside" not in lab.name
    assert (lab.model.bert.embeddings.position_embeddings is not None) == case.position_table
    # every parameter of the transformers model is one of ours (tied ones counted once), none left over
    assert sum(p.numel() for p in lab.model.parameters()) == sum(p.numel() for p in built.hf.parameters())
    # strict: a folder missing one encoder weight is refused by the weight's name, not filled with zeros
    broken = tmp_path / "broken"
    shutil.copytree(built.folder, broken)
    state = load_file(str(broken / "model.safetensors"))
    dropped = sorted(k for k in state if re.search(r"layers?\.0\.", k) and k.endswith("weight"))[0]  # layer 1's
    del state[dropped]
    save_file(state, str(broken / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"weights do not match a BERT model; missing keys: bert\.encoder\.layer\.0\."):
        load(str(broken), device="cpu")


@pytest.mark.parametrize("case", FAMILY_CASES)
def test_hidden_states_attention_and_mlm_logits_match_transformers(case, family_root):
    built = case.build(family_root)
    mask = built.inputs["attention_mask"]
    assert mask.shape[0] == 2 and not bool(mask.all()), "the sample batch has a padded row"
    for where, model in (("folder", built.lab.model), ("model object", model_from_transformers(built.hf))):
        diff = parity(model, built.hf, **built.inputs)
        assert diff.within(case.tolerance), (where, diff, case.tolerance)
    # the parity means something: the attention is far from uniform, so a wrong scale or bias would show
    a = built.lab.analyze(LONG)
    n = len(a.tokens)
    assert a.attention.max() > 0.5 and a.attention.max(-1).mean() > 2 / n, (a.attention.max(), n)


@pytest.mark.parametrize("case", FAMILY_CASES)
def test_hook_points_of_the_table_and_the_familys_own_are_present(case, family_root):
    built = case.build(family_root)
    model, layers = built.lab.model, built.layers
    names = set(model.hook_names)
    has_table = model.bert.embeddings.position_embeddings is not None
    has_segments = model.bert.embeddings.token_type_embeddings is not None
    expected = set()
    for spot in HOOK_TABLE:
        if (spot == "position" and not has_table) or (spot == "nsp_logits" and not model.has_nsp_head) \
                or (spot == "logits" and not model.has_mlm_head) or (spot == "segment" and not has_segments):
            continue
        expected |= spot_names(spot, layers)
    assert not expected - names, sorted(expected - names)
    assert (hook_name("position") in names) == has_table == case.position_table
    assert (hook_name("segment") in names) == has_segments  # no table, no hook point (a point never called is a lie)
    own = {spot for spot in FAMILY_HOOKS if spot_names(spot, layers) & names}
    assert own == case.family_hooks
    for spot in own:  # per-layer family spots in every layer
        assert spot_names(spot, layers) <= names, spot
    assert names == expected | {n for spot in own for n in spot_names(spot, layers)}  # nothing unlisted


@pytest.mark.parametrize("case", FAMILY_CASES)
def test_every_listed_hook_point_captures_in_one_forward_pass(case, family_root):
    built = case.build(family_root)
    model = built.lab.model
    names = set(model.hook_names)
    with torch.no_grad(), model.hooks(capture=sorted(names)) as run:
        model(input_ids=built.inputs["input_ids"][:1])
    assert set(run.cache) <= names
    assert all(torch.isfinite(run.cache[n]).all() for n in run.cache)
    missed = names - set(run.cache)
    assert not missed, sorted(missed)  # a listed point no pass calls: capturing gives nothing, an edit changes nothing


@pytest.mark.parametrize("case", FAMILY_CASES)
def test_every_attention_source_computes_or_refuses_by_name(case, family_root):
    from bertviz_lab.attention.sources import SOURCES, layer_matrices, with_source

    built = case.build(family_root)
    lab = built.lab
    a = lab.analyze(SHORT_SENTENCE)
    layers, heads, n = a.attention.shape[:3]
    assert (layers, heads) == (lab.n_layers, lab.n_heads) and a.attention.shape[3] == n
    ran, refused, problems = [], [], []
    for name, source in SOURCES.items():
        try:
            weights = with_source(lab, a, name).attention
        except ValueError as error:  # InputError (PreNormError) is a ValueError
            refused.append(name)
            message = str(error)
            if METHOD_NAMES[name] not in message or case.refused_sources.get(name, "\0") not in message:
                problems.append(f"{name} refused without naming its method and reason: {message}")
            with pytest.raises(ValueError) as again:
                layer_matrices(lab, a, name)
            if str(again.value) != message:
                problems.append(f"{name}: layer_matrices refuses otherwise: {again.value}")
            continue
        ran.append(name)
        matrices = layer_matrices(lab, a, name)
        if weights.shape != (layers, heads, n, n) or matrices.shape != (layers, n, n):
            problems.append(f"{name}: shapes {weights.shape}, {matrices.shape}")
            continue
        if not (np.isfinite(weights).all() and np.isfinite(matrices).all()):
            problems.append(f"{name}: not finite")
        if weights.min() < 0 or weights.max() <= 0:
            problems.append(f"{name}: weights from {weights.min()} to {weights.max()}")
        if name in ROW_STOCHASTIC and np.abs(weights.sum(-1) - 1).max() > 1e-4:
            problems.append(f"{name}: rows sum to {weights.sum(-1).min()}..{weights.sum(-1).max()}")
        if source.per_layer and not (np.array_equal(weights, np.repeat(weights[:, :1], heads, 1))
                                     and np.allclose(weights[:, 0], matrices, atol=1e-6)):
            problems.append(f"{name}: a per-layer source differs between heads or from its layer matrices")
    if not np.allclose(layer_matrices(lab, a, "attention"), a.attention.mean(1), atol=1e-6):
        problems.append("the attention source's layer matrices (one more pass) are not the analysis's head means")
    assert not problems, problems
    assert sorted(refused) == sorted(case.refused_sources), (ran, refused)


def cli_intervention(kind: str, lab):
    """The intervention as the CLI's ``compare`` builds it (cli/interventions_commands.py), every option given."""
    from bertviz_lab.interventions import make_intervention

    return make_intervention(kind, (lab.n_layers, lab.n_heads), positions=[1], heads="1-1", shift=2, seed=1,
                             sinks="symmetric", unit="words", mode="zero", reference=lambda: None)


@pytest.mark.parametrize("case", FAMILY_CASES)
def test_every_intervention_runs_or_refuses_with_a_sentence(case, family_root):
    from bertviz_lab.interventions import REGISTRY, InterventionError, compare

    lab = case.build(family_root).lab
    ran, refused, problems = {}, {}, []
    for kind in REGISTRY:
        try:
            ran[kind] = compare(lab, MASKED, cli_intervention(kind, lab))
        except InterventionError as error:
            refused[kind] = str(error)
    assert set(ran) == case.interventions, {"ran": sorted(ran), "refused": sorted(refused)}
    # the page lists exactly those that run on this model (issue 58: only what applies to its position scheme)
    from bertviz_lab.interventions.kinds import applicable_kinds

    assert set(applicable_kinds(lab.model)) == set(ran)
    for kind, message in refused.items():
        if not message.startswith(REFUSALS.get(kind, "\0")) or "\n" in message:
            problems.append(f"{kind} refused with {message!r}")
    for kind, c in ran.items():
        js = c.js
        if js.shape != (lab.n_layers, lab.n_heads) or not np.isfinite(js).all() or js.min() < 0:
            problems.append(f"{kind}: JS divergences {js}")
            continue
        if not c.changes or not all(np.isfinite(x.intervened_probability) for x in c.changes):
            problems.append(f"{kind}: no masked-word prediction compared")
        if kind == "rotate-positions":  # rotary scores depend on offsets only: nothing may change
            if js.max() > 1e-6:
                problems.append(f"{kind} changed attention: max JS {js.max()}")
        elif kind == "ablate-heads":  # head 1-1 ablated: layer 1's attention as before, the later layers' moved
            if js[0].max() != 0 or js[1:].max() <= 0:
                problems.append(f"{kind}: JS per layer {js.max(-1)}")
        elif js.max() <= 1e-3:
            problems.append(f"{kind} changed nothing: max JS {js.max()}")
    assert not problems, problems
