import os
from pathlib import Path

import builders  # tests/ is on sys.path: pytest puts a conftest's folder there
import pytest

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no test touches the network
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


@pytest.fixture(scope="session")
def tiny_hf():
    return builders.random_pretraining_model(seed=0)


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory, tiny_hf):
    return builders.save_checkpoint(tiny_hf, tmp_path_factory.mktemp("tiny") / "ckpt")


@pytest.fixture(scope="session")
def tiny_lab(tiny_folder):
    import bertviz_lab

    return bertviz_lab.load(str(tiny_folder), device="cpu")


@pytest.fixture(scope="session")
def default_lab():
    """The embedded default as users get it (with bertviz-lab's MLM head when it is shipped)."""
    import bertviz_lab

    return bertviz_lab.load("default", device="cpu")


@pytest.fixture(scope="session")
def minilm_lab():
    import bertviz_lab

    return bertviz_lab.load("default", device="cpu", mlm_head=None)


def launch(demo, limits=None):
    """Start a Blocks app in this process on a free loopback port, with the app's limits; returns its URL."""
    from unittest import mock

    from bertviz_lab.app import LIMITS, launch_kwargs, queue_kwargs

    demo.queue(**queue_kwargs(limits or LIMITS))
    # a port chosen now, never Gradio's default 7860+ (where a user's own app runs)
    from bertviz_lab.app.ports import free_port, patient_url_ok

    with mock.patch("gradio.networking.url_ok", patient_url_ok):
        _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                                quiet=True, **launch_kwargs(limits or LIMITS, demo))
    return url


def serve(lab):
    """Yield the URL of an app built on ``lab``; close it afterwards."""
    from bertviz_lab.app import build_demo

    demo = build_demo(lab)
    yield launch(demo)
    demo.close()


@pytest.fixture(scope="session")
def tiny_app(tiny_lab):
    yield from serve(tiny_lab)


@pytest.fixture(scope="session")
def default_app(default_lab):
    yield from serve(default_lab)


@pytest.fixture(scope="session")
def sharp_hf():
    """A random BERT whose attention is far from uniform (query/key weights scaled up)."""
    import torch

    model = builders.random_pretraining_model(seed=5)
    with torch.no_grad():
        for layer in model.bert.encoder.layer:
            layer.attention.self.query.weight.mul_(12)
            layer.attention.self.key.weight.mul_(12)
    return model


@pytest.fixture(scope="session")
def sharp_lab(tmp_path_factory, sharp_hf):
    import bertviz_lab

    folder = builders.save_checkpoint(sharp_hf, tmp_path_factory.mktemp("sharp") / "ckpt")
    return bertviz_lab.load(str(folder), device="cpu")


@pytest.fixture(scope="module")
def sharp_app(sharp_lab):
    yield from serve(sharp_lab)


@pytest.fixture(scope="module")
def browser():
    """Headless Debian chromium (tests/browser.py), skipped locally where it is not installed."""
    from browser import browser_or_skip

    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = browser_or_skip(p)
        yield b
        b.close()


@pytest.fixture(scope="module")
def ud_files(tmp_path_factory):
    """Two UD-style train splits of documents: many short ones and one long one."""
    folder = tmp_path_factory.mktemp("ud")
    ewt = {f"web{d}": [f"web document {d} says sentence {s} aloud" for s in range(6)] for d in range(30)}
    novel = {"novel": [f"the novel line {s} goes on and on" for s in range(130)]}  # one long document
    return (builders.conllu_documents(folder / "en_web-ud-train.conllu", ewt),
            builders.conllu_documents(folder / "en_novel-ud-train.conllu", novel))


@pytest.fixture(scope="module")
def tiny_corpus(tmp_path_factory, ud_files):
    """A small corpus built as build-corpus builds one: running text, WordNet glosses, held-out splits."""
    from bertviz_lab.mlm.corpus import RunningText, build_corpus

    out = tmp_path_factory.mktemp("corpus")
    words = "the cat sat on mat dog ran to park with a big red small blue house tree".split()
    docs = {f"d{d}": [" ".join(words[(d + s + k) % len(words)] for k in range(5)) for s in range(4)] for d in range(40)}
    path = builders.conllu_documents(out / "en_tiny-ud-train.conllu", docs)
    build_corpus(out / "c", heldout=10, folder=builders.fake_wordnet(out / "wn", 20), running=[RunningText(path, "CC0")],
                 heldout_sentences=16, validation_sentences=8, validation_lines=5)
    return out / "c"


def call(client, api_name: str, *args) -> dict:
    """Call an app event through gradio_client; its results by output name (never by position)."""
    from bertviz_lab.app.events import api_outputs

    names = api_outputs(api_name)
    result = client.predict(*args, api_name=f"/{api_name}")
    return dict(zip(names, result if len(names) > 1 else (result,)))


# ---- tiers, set here and only here: `pytest -m "not slow"` is the inner loop (no browser, no server, no
# subprocess, no Ray, no wheel or notebook build); CI runs everything. A test is slow when it uses one of
# SLOW_FIXTURES (a browser, a served app, the embedded model), when its file is in SLOW_FILES, or when it is
# named in SLOW_TESTS (a server, a subprocess, the CLI end to end). A name here that no longer exists fails
# the collection of the whole suite, so a renamed test cannot drop into the fast tier unseen.
SLOW_FIXTURES = {"browser", "tiny_app", "default_app", "public_app", "default_lab", "minilm_lab", "sharp_app",
                 "small_limit_app"}
# whole files whose module fixtures build several transformers models (10-20 s of setup each)
SLOW_FILES = {'test_allocator.py', 'test_twins.py', 'test_family_conformance.py',
              'test_deberta.py', 'test_modernbert.py', 'test_space.py', 'test_position_families.py',
              'test_position_interventions.py', 'test_classifier.py', 'test_hostile_configs.py',
              'test_engines.py'}
SLOW_TESTS = {
    'test_zerogpu.py::test_every_model_handler_of_a_public_app_asks_for_that_duration',
    'test_perturbed_masking.py::test_impact_matrices_equal_their_per_piece_loop_and_merge',
    'test_perturbed_masking.py::test_the_perturbed_masking_command_prints_and_writes_json',
    'test_mdl.py::test_a_layer_is_coded_in_fewer_bits_than_uniform_and_the_command_says_so',
    'test_typed_parse.py::test_analyze_parse_json_names_the_parser_and_scores_every_head',
    'test_naopc_hostile.py::test_python_m_refuses_an_oversize_field_with_exit_2_not_a_traceback',
    'test_request_isolation.py::test_explanations_and_runs_from_16_threads_equal_the_same_requests_alone',
    'test_request_isolation.py::test_a_module_hook_on_the_shared_model_would_fail_this_check',
    'test_sentiment.py::test_a_leg_cut_short_resumes_to_the_weights_of_one_run_and_the_classifier_learns',
    'test_sentiment.py::test_resume_refuses_other_settings',
    'test_sentiment.py::test_the_protocol_runs_offline_on_the_shipped_classifier_and_the_papers_short_set',
    'test_cli_progress.py::test_structural_probe_counts_training_and_evaluation_passes',
    'test_cli_progress.py::test_score_heads_counts_every_pass_over_the_treebank',
    'test_cli_progress.py::test_a_score_heads_job_estimates_each_pair',
    'test_classifier.py::test_the_command_line_prints_and_explains_the_classes',
    'test_position_interventions.py::test_the_page_inspector_shows_mpnets_relative_bias_and_berts_sinusoids',
    'test_mpnet_extra.py::test_real_mpnet_loads_strictly_with_attention_parity_against_transformers',
    'test_position_interventions.py::test_position_controls_on_mpnet_list_the_relative_bias_pair',
    'test_naopc.py::test_cli_prints_every_ranking_with_intervals',
    'test_naopc.py::test_the_protocol_scores_erasure_at_the_upper_bound',
    'test_position_families.py::test_albert_loads_from_a_hub_cache_with_hidden_state_attention_and_mlm_parity',
    'test_position_families.py::test_albert_masked_predictions_and_the_lab_work',
    'test_classifier.py::test_the_predicted_class_is_explained_on_every_family',
    'test_mcp.py::test_score_heads_returns_the_syntax_tabs_best_heads_with_intervals',
    'test_mcp.py::test_explain_matches_the_attribution_of_the_first_mask',
    'test_mcp.py::test_the_mcp_schema_lists_exactly_the_four_tools_with_their_docstrings',
    'test_mcp.py::test_an_agent_lists_and_calls_the_tools_over_mcp_under_the_public_gate',
    'test_analyze_cli.py::test_a_training_leg_records_the_command_main_was_given_not_sys_argv',
    'test_analyze_cli.py::test_analyze_gives_rollout_and_flow_from_the_registry',
    'test_analyze_cli.py::test_cli_errors_exit_2_without_traceback',
    'test_analyze_cli.py::test_cli_pair_and_mask_on_tiny_checkpoint',
    'test_analyze_cli.py::test_compare_over_a_conllu_set_and_patch_pairs',
    'test_analyze_cli.py::test_every_user_error_is_one_sentence_on_stderr_with_exit_2',
    'test_analyze_cli.py::test_json_means_one_json_object_and_its_absence_a_short_summary',
    'test_analyze_cli.py::test_structural_probe_without_flags_uses_the_shipped_probes_or_names_the_flags',
    'test_analyze_cli.py::test_sweep_and_patch_records_hold_what_the_library_computes',
    'test_analyze_cli.py::test_sweep_over_a_sentence_set_and_patch',
    'test_analyze_cli.py::test_the_module_command_refuses_in_one_sentence_without_a_traceback',
    'test_app_api.py::test_a_source_the_registry_does_not_know_is_refused_not_replaced',
    'test_app_api.py::test_directional_intervention_and_sweep_through_the_api',
    'test_app_api.py::test_directional_sweep_says_which_sink_treatment_ran',
    'test_app_api.py::test_mean_ablation_through_the_api',
    'test_app_api.py::test_model_that_cannot_be_loaded_is_a_message',
    'test_app_api.py::test_patching_through_the_api_reports_the_library_values',
    'test_app_api.py::test_position_controls_list_each_intervention_with_its_control',
    'test_app_api.py::test_positional_intervention_and_position_inspector_through_the_api',
    'test_app_api.py::test_score_heads_and_sentence_arcs_through_the_api',
    'test_app_api.py::test_sets_through_the_api',
    'test_app_api.py::test_structural_probe_needs_probes_trained_on_these_weights',
    'test_default_mlm.py::test_cli_analyze_on_the_default',
    'test_default_mlm.py::test_cli_eval_mlm_on_the_default',
    'test_default_mlm.py::test_shipped_held_out_results_reproduce',
    'test_faithfulness.py::test_cli_ranks_sources_with_intervals',
    'test_hostile.py::test_cli_answers_one_line_never_a_traceback',
    'test_hostile.py::test_public_mode_limits_tokens_and_reply_size',
    'test_hostile.py::test_syntax_uploads_are_capped_and_named',
    'test_hostile.py::test_treebank_scoring_runs_one_at_a_time_behind_a_bounded_queue',
    'test_mlm_eval.py::test_eval_mlm_cli_matches_transformers',
    'test_mlm_eval.py::test_eval_mlm_refuses_a_model_without_mlm_head',
    'test_neighbours.py::test_the_app_searches_from_a_token_of_the_analysis',
    'test_neuron_view.py::test_a_new_run_or_a_refused_one_never_leaves_views_that_do_not_match',
    'test_neuron_view.py::test_the_app_shows_the_neuron_view_in_a_frame_of_its_own',
    'test_packaging.py::test_wheel_installs_and_runs_from_another_folder',
    'test_public_gate.py::test_a_full_disk_answers_one_sentence_and_run_recovers',
    'test_public_gate.py::test_a_request_past_its_time_is_stopped_with_a_sentence',
    'test_public_gate.py::test_a_restart_reclaims_what_kill_9_left_and_sigterm_cleans_up',
    'test_public_gate.py::test_cheap_events_from_new_visitors_evict_no_analysis',
    'test_public_gate.py::test_exports_stay_bounded_and_are_never_copied',
    'test_public_gate.py::test_pick_head_and_select_tab_check_what_the_api_sends',
    'test_public_gate.py::test_set_handlers_check_their_size_also_when_called_directly',
    'test_public_gate.py::test_stale_folders_of_dead_servers_are_removed_and_only_those',
    'test_qk_space.py::test_the_app_draws_the_qk_space_and_head_similarity',
    'test_running_text.py::test_eval_nsp_cli_reports_json_and_refuses_what_it_cannot_score',
    'test_selection.py::test_select_head_scores_every_validation_point_on_development_data',
    'test_structure.py::test_structural_probe_command_writes_everything_and_refuses_a_test_split',
    'test_structure.py::test_the_python_api_draws_the_comparison',
    'test_syntax.py::test_cli_malformed_file_writes_nothing',
    'test_syntax_job.py::test_ray_engine_answers_for_unscorable_treebanks_without_starting_ray',
    'test_syntax_job.py::test_ray_engine_gives_the_local_counts_for_the_model_and_its_null_model',
    'test_syntax_job.py::test_two_treebanks_two_checkpoints_one_tidy_table_and_resume',
    'test_teaching.py::test_the_shipped_head_does_not_regress_on_the_teaching_set',
    'test_treebank_hostile.py::test_a_job_keeps_two_treebanks_of_one_file_name_apart',
    'test_treebank_hostile.py::test_five_thousand_one_word_sentences_through_python_m',
    'test_treebank_hostile.py::test_the_score_heads_cli_and_report_count_words_without_pieces',
    'test_treebank_hostile.py::test_the_score_heads_cli_answers_one_line_for_one_word_sentences',
    'test_treebank_hostile.py::test_the_score_heads_cli_counts_the_pairs_it_wrote',
}


def tier_key(item) -> str:
    return f"{Path(str(item.fspath)).name}::{getattr(item, 'originalname', item.name)}"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if (SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) or Path(str(item.fspath)).name in SLOW_FILES
                or tier_key(item) in SLOW_TESTS):
            item.add_marker(pytest.mark.slow)
    collected_files = {Path(str(item.fspath)).name for item in items}
    whole_suite = collected_files >= {path.name for path in Path(__file__).parent.glob("test_*.py")}
    missing = SLOW_TESTS - {tier_key(item) for item in items}
    if whole_suite and missing and not config.getoption("-k") and not config.getoption("-m"):
        raise pytest.UsageError(f"tests/conftest.py SLOW_TESTS names tests that do not exist: {sorted(missing)}")
