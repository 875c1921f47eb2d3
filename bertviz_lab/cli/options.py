"""What every command shares: how a sub-command is declared (its help, its two examples, --json),
the model options and the one rule for the default checkpoint, number parsers, ``emit``, the
one way a command prints its result (JSON with --json, a short summary without), and ``WorkBar``,
the one way long work says up front how long it will take and then shows its progress (stderr).

Heavy imports stay inside functions, so ``bertviz-lab --help`` stays fast."""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..lab import InputError, Lab, load
from ..tasks.weights import weights_for

MODEL_RULE = ("Without --model, commands that need the masked-word or next-sentence head use 'default' and "
              "attention-only analyses use 'minilm-original'; every output names the weights it came from")


class Parser(argparse.ArgumentParser):
    """An argument parser whose refusal is one sentence on stderr and exit status 2 (no usage dump)."""

    def error(self, message: str) -> None:  # argparse's own hook for a bad flag or value
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def command(sub: argparse._SubParsersAction, name: str, summary: str, examples: Iterable[str],
            aliases: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    """A sub-command whose --help ends with its examples, and its --json flag."""
    lines = list(examples)
    p = sub.add_parser(name, help=summary, aliases=list(aliases), formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n" + "\n".join(f"  {line}" for line in lines))
    p.add_argument("--json", action="store_true",
                   help="print one JSON object instead of a short summary (its \"recipe\" re-runs it: bertviz-lab run)")
    p.set_defaults(action_name=name)
    return p


def emit(args: argparse.Namespace, data: dict, summary: Iterable[str]) -> int:
    """The one way a command prints its result: ``data`` as one JSON line with --json, else the
    ``summary`` lines (a generator is only run when the summary is printed). Exit status 0. Every record
    carries the recipe that made it: under "recipe" in the JSON, and as recipe.json in an --out folder."""
    from .recipe_of_args import recipe_of

    recipe = recipe_of(args)
    out = getattr(args, "out", None)
    if recipe is not None and out is not None and Path(out).is_dir():
        (Path(out) / "recipe.json").write_text(recipe.text() + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps({**data, "recipe": recipe.to_json()} if recipe is not None else data))
    else:
        for line in summary:
            print(line)
    return 0


def chosen_checkpoint(args: argparse.Namespace, recorded: str | None = None) -> str:
    """The checkpoint a command loads: --model as typed; else the one a file was made with
    (``recorded``, e.g. a corpus index, whose queries need its weights); else the rule."""
    return weights_for(args.needs_mlm_head, args.model or recorded)


def add_model_options(p: argparse.ArgumentParser, needs_mlm_head: bool, repeatable: bool = False,
                      what: str = "the weights", loading: bool = True, recorded: str | None = None) -> None:
    """--model (with the default rule in its help) and --device; with ``loading``, --dtype and --allow-pickle.
    ``recorded`` says where a command takes a recorded checkpoint from instead of the rule (see chosen_checkpoint)."""
    chosen = recorded or weights_for(needs_mlm_head)
    p.add_argument("--model", default=None, action="append" if repeatable else "store",
                   help=f"{what}: 'default' (embedded MiniLM-L6 with bertviz-lab's masked-word and next-sentence "
                        "heads), 'minilm-original' (the published weights), 'sst2' (the shipped sentiment classifier), "
                        "a checkpoint folder or a hub id such as "
                        f"bert-base-uncased{'; repeatable' if repeatable else ''}. {MODEL_RULE} (this command: "
                        f"{chosen})")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default: auto)")
    p.set_defaults(needs_mlm_head=needs_mlm_head)
    p.add_argument("--weights-sha256", default=None, metavar="HEX",
                   help="refuse to run unless the loaded weights have this SHA-256 (what a recipe records)")
    if loading:
        p.add_argument("--dtype", default=None, help="float32 (default), float16 or bfloat16 (GPU only)")
        p.add_argument("--allow-pickle", action="store_true", help="allow loading pytorch_model.bin pickles")


def add_engine_options(p: argparse.ArgumentParser, unit: str = "sentences") -> None:
    """--engine, --ray-address and --workers: where a corpus command's units run (``engines.py``)."""
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help=f"local: on this machine; ray: {unit} sent to Ray Data workers, each loading the checkpoint "
                        "once; the same records and intervals either way")
    p.add_argument("--ray-address", default=None, help="an existing Ray cluster (default: start one on this machine)")
    p.add_argument("--workers", type=positive_int, default=2, help="Ray workers (one checkpoint loaded in each)")


def engine_from_args(args: argparse.Namespace):
    """The ``engines.Engine`` the options name (the workers load the checkpoint on --device, as the driver)."""
    from ..engines import Engine

    device = getattr(args, "device", "cpu")
    return Engine(args.engine, args.ray_address, args.workers, device="cpu" if device == "auto" else device,
                  allow_pickle=getattr(args, "allow_pickle", False))


def lab_from_args(args: argparse.Namespace, checkpoint: str | None = None) -> Lab:
    """Load ``checkpoint`` (default: the one ``chosen_checkpoint`` picks) with --device/--dtype/--allow-pickle;
    with --weights-sha256, refuse other weights. The weights are remembered for the record's recipe."""
    lab = load(checkpoint or chosen_checkpoint(args), device=args.device, dtype=args.dtype,
               allow_pickle=args.allow_pickle)
    info = lab.checkpoint_info()
    expected = getattr(args, "weights_sha256", None)
    if expected and info.sha256 != expected.lower():
        raise InputError(f"the weights of {info.checkpoint!r} have SHA-256 {info.sha256[:12]}…, not "
                         f"{expected[:12]}… (--weights-sha256, or a recipe's checkpoint): these are other weights")
    args.loaded_checkpoint = info
    return lab


# ---- number parsers (argparse types: a bad value is refused with one sentence) ----------------
def _number(text: str, kind: type, what: str):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def share(text: str) -> float:
    """A fraction in (0, 1]."""
    value = _number(text, float, "a number")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1 (got {value})")
    return value


def open_share(text: str) -> float:
    """A fraction strictly between 0 and 1."""
    value = _number(text, float, "a number")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (got {value})")
    return value


def positive_int(text: str) -> int:
    value = _number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def count(text: str) -> int:
    """A whole number of at least 0."""
    value = _number(text, int, "a whole number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more (got {value})")
    return value


def seed(text: str) -> int:
    """A random seed: a whole number from 0 to 2^32 - 1 (NumPy's generators take no negative seed)."""
    value = _number(text, int, "a whole number")
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"a seed is a whole number from 0 to {2**32 - 1} (got {value})")
    return value


def head_list(text: str) -> tuple[int, ...]:
    """1-based heads such as '3,9' -> 0-based (2, 8)."""
    heads = tuple(positive_int(h) - 1 for h in text.replace(" ", "").split(",") if h)
    if not heads:
        raise argparse.ArgumentTypeError(f"{text!r} names no head (e.g. 3,9)")
    return heads


# ---- long work: the estimate line and the progress bar (stderr; stdout stays the result) --------
def duration(seconds: float) -> str:
    """A time as a person says it: "about 40 s", "about 4 min", "about 1 h 20 min"."""
    if seconds < 1:
        return "under a second"
    if seconds < 90:
        return f"about {seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"about {minutes} min" if minutes < 60 else f"about {minutes // 60} h {minutes % 60} min"


MEASURED_UNITS = 3  # units after the warm-up the estimate is measured on (one alone varies 2x with its length)


class WorkBar:
    """What a long command owes whoever waits for it, on stderr: one line with how much work there is and
    about how long it takes on this machine, then a progress bar (tqdm) that ends at its total. The time is
    measured, never typed: the units after the first (which warms the machine up: the first of a faithfulness
    run took 4x its successors) scaled to the rest, plus the time spent so far. ``cost(k)``, when the units
    differ in size (a sentence of 10 words has 2^10 masked inputs, one of 5 has 32), is the work of the first
    k units in any one unit; without it every unit costs the same. It is the domain loop's
    ``progress(done, total)`` callback, so the loop stays free of printing; the loop calls it with 0 before its
    first unit (the clock starts then), else the clock starts when the bar is made. The line prints whether or
    not stderr is a terminal."""

    def __init__(self, name: str, unit: str, describe: Callable[[int], str], measured_on: str,
                 cost: Callable[[int], float] | None = None) -> None:
        self.name, self.unit, self.describe, self.measured_on = name, unit, describe, measured_on
        self.cost = cost or float
        self.started, self.bar, self.said, self.closed = time.perf_counter(), None, False, False
        self.first: tuple[int, float] | None = None  # (units done, when) at the first report: the warm-up's end

    def __call__(self, done: int, total: int) -> None:
        from tqdm import tqdm

        if total <= 0 or self.closed:  # nothing to do (every sentence skipped: the command says why), or done
            return
        if self.bar is None:
            if done == 0:
                self.started = time.perf_counter()  # the loop starts its first unit now
            self.bar = tqdm(total=total, desc=self.name, unit=self.unit, file=sys.stderr)
        self.bar.total = total
        if done > 0 and not self.said:
            if self.first is None and done < total:
                self.first = (done, time.perf_counter())  # the warm-up is over: measure from here
            elif self.first is None or done >= total or done - self.first[0] >= MEASURED_UNITS:
                self.say(done, total)
        self.bar.update(done - self.bar.n)
        if done >= total:  # its last line stays; the next bar (a job's next pair) starts below it
            self.close()

    def say(self, done: int, total: int) -> None:
        """The estimate line: the work in its units, the time so far and the rate after the warm-up scaled to
        the work left (or, when the first report ends the work, the time it took)."""
        from tqdm import tqdm

        now = time.perf_counter()
        if self.first is None:  # all of it in one report: no estimate to make, the time it took
            tqdm.write(f"{self.name}: {self.describe(total)}; took {duration(now - self.started)} on this machine",
                       file=sys.stderr)
            self.said = True
            return
        first_done, first_at = self.first
        measured = self.cost(done) - self.cost(first_done)
        if measured > 0:
            seconds = (now - self.started) + (now - first_at) / measured * (self.cost(total) - self.cost(done))
        else:  # units of no cost since the warm-up: the whole time so far, scaled
            seconds = (now - self.started) * self.cost(total) / max(self.cost(done), 1e-9)
        tqdm.write(f"{self.name}: {self.describe(total)}; {duration(seconds)} on this machine "
                   f"(measured after the first {self.measured_on}, a warm-up)", file=sys.stderr)
        self.said = True

    @staticmethod
    def note(message: str) -> None:
        """A line of what the work is doing now, above any bar (never through it)."""
        from tqdm import tqdm

        tqdm.write(message, file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None and not self.closed:
            self.bar.close()
        self.closed = self.bar is not None

    def __enter__(self) -> WorkBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
