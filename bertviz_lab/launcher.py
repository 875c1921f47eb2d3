"""The app launcher behind ``python app.py`` (and a Space's app.py): options, limits, launch.

Every option also reads an environment variable (for a hosted Hugging Face Space):
BERTVIZ_LAB_MODEL, BERTVIZ_LAB_DEVICE, BERTVIZ_LAB_MODELS (comma-separated models users may
switch to), BERTVIZ_LAB_ALLOW_ANY_MODEL=1, BERTVIZ_LAB_MCP=1 (or GRADIO_MCP_SERVER=true),
GRADIO_SERVER_NAME, GRADIO_SERVER_PORT.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
import warnings
from unittest import mock

from bertviz_lab.app import LIMITS, build_demo, env_list, launch_kwargs, queue_kwargs
from bertviz_lab.app.ports import patient_url_ok, port_problem
from bertviz_lab.app.state import Limits


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="bertviz-lab: look inside BERT in the browser")
    p.add_argument("--model", default=os.environ.get("BERTVIZ_LAB_MODEL", "default"),
                   help="'default' (embedded MiniLM-L6), a checkpoint folder or a hub id")
    p.add_argument("--device", default=os.environ.get("BERTVIZ_LAB_DEVICE", "auto"), help="auto, cpu, cuda[:N], mps")
    p.add_argument("--models", default=",".join(env_list("BERTVIZ_LAB_MODELS")),
                   help="comma-separated extra models users may switch to")
    p.add_argument("--allow-any-model", action="store_true",
                   default=os.environ.get("BERTVIZ_LAB_ALLOW_ANY_MODEL", "") in ("1", "true", "yes"),
                   help="let users load any hub id or folder")
    p.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    p.add_argument("--share", action="store_true", help="create a public gradio.live link")
    p.add_argument("--public", action="store_true",
                   default=os.environ.get("BERTVIZ_LAB_PUBLIC", "1" if os.environ.get("SPACE_ID") else "") in
                   ("1", "true", "yes"),
                   help="public mode (on by default on a Hugging Face Space): 256 tokens per request, compact "
                        "/attention replies up to 8 MB, fewer session states, the model allow-list only")
    p.add_argument("--no-keep-freed-memory", action="store_true",
                   help="leave glibc's allocator settings alone (by default the app keeps freed attention buffers "
                        "for reuse; see BENCHMARKS.md)")
    p.add_argument("--mcp", action="store_true",
                   default=os.environ.get("BERTVIZ_LAB_MCP", "") in ("1", "true", "yes")
                   or os.environ.get("GRADIO_MCP_SERVER", "").lower() == "true",
                   help="also serve the agent tools analyze, predict_masked, explain and score_heads over MCP at "
                        "/gradio_api/mcp/ (needs pip install \"gradio[mcp]\"); the same limits apply")
    return p.parse_args(argv)


MCP_MISSING = 'error: --mcp needs the MCP package; install it with: pip install "gradio[mcp]"'


def check_mcp(wanted: bool) -> None:
    """Fail before the model loads, in one sentence, when the agent door is asked for without its package
    (Gradio would print a warning and serve the page without it)."""
    if not wanted:
        return
    if importlib.util.find_spec("mcp") is None:
        sys.exit(MCP_MISSING)
    # Gradio warns about the page's events with session state before the app's lifespan narrows the
    # MCP tools to the four agent tools (none of which has state): not true of what agents see.
    warnings.filterwarnings("ignore", message="This MCP server includes a tool that has a gr.State input")


def serving_lab(checkpoint: str, device: str, keep_memory: bool = True):
    """The model loaded as a server process runs it: freed memory kept between requests and handed back to the
    OS every 30 s (``bert/runtime/allocator.py``; process-wide, so only the app, a process of its own, opts in) and
    every request's tensor work on one thread, the
    load's included (``bert/runtime/model_thread.py``). Benchmarks start their servers with it too."""
    from bertviz_lab.bert.runtime.model_thread import on_model_thread, use_model_thread
    from bertviz_lab.lab import load

    if keep_memory:
        from bertviz_lab.bert.runtime.allocator import keep_freed_memory, trim_periodically

        keep_freed_memory()
        trim_periodically()
    use_model_thread()
    return on_model_thread(load, checkpoint, device=device)


def main(argv=None) -> None:
    from tqdm import tqdm

    from bertviz_lab.bert import CheckpointError, DeviceError
    args = parse_args(argv)
    check_mcp(args.mcp)
    problem = port_problem(args.host, args.port)  # before the model loads: a busy port is one sentence, at once
    if problem:
        sys.exit(f"error: {problem}")
    with tqdm(total=1, desc=f"loading model {args.model}", unit="model") as bar:
        try:
            lab = serving_lab(args.model, args.device, keep_memory=not args.no_keep_freed_memory)
        except (CheckpointError, DeviceError) as error:
            sys.exit(f"error: {error}")
        bar.update(1)
    print(f"model: {lab.name} on {lab.device}")
    models = [m for m in args.models.split(",") if m.strip()]
    limits = Limits.public() if args.public else LIMITS
    if args.public and args.allow_any_model:
        print("public mode: --allow-any-model ignored; users choose from --models only", file=sys.stderr)
    demo = build_demo(lab, allowed_models=models, allow_any_model=args.allow_any_model and not args.public,
                      limits=limits)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # as Ctrl-C: Gradio closes, temp folders go (atexit)
    with mock.patch("gradio.networking.url_ok", patient_url_ok):  # a busy machine answers the first check late
        demo.queue(**queue_kwargs(limits)).launch(server_name=args.host, server_port=args.port, share=args.share,
                                                       **launch_kwargs(limits, demo, mcp=args.mcp))


if __name__ == "__main__":
    main()
