"""`pregen-search`: the command line (argparse subcommands).

Handlers import what they need when they run, so that ``--help`` answers at once. Bad input
ends in one line on stderr naming the file and the problem, exit code 2, and no output.
"""
from __future__ import annotations

import argparse
import sys


def _search(config, args, source: str = "config") -> int:
    from .pipeline.distributed import run_local_processes
    from .pipeline.preflight import check_search
    alone = args.coordinator is None and args.process_id is None and not args.distributed
    starts_processes = alone and (args.num_processes or 1) > 1
    if not alone or starts_processes:  # before processes start or join (a lone search: run_search checks first)
        check_search(config, source, tier_modules=alone)
    if starts_processes:  # N processes on this machine, started from here
        sys.stdout.flush()
        return run_local_processes(args.argv, args.num_processes)
    return _search_in_cluster(config, args, source)


def _search_in_cluster(config, args, source: str) -> int:
    import time

    from .pipeline import run_search, write_outputs
    from .pipeline.distributed import initialize
    start = time.perf_counter()
    cluster = initialize(args.coordinator, args.num_processes, args.process_id, detect=args.distributed)
    result = run_search(config, args.out, progress=not args.no_progress, cluster=cluster, workers=args.workers,
                        trainers=args.trainers, source=source)
    if result is None:  # not process 0: its models are in the shared cache, process 0 writes the run folder
        print(f"process {cluster.index} of {cluster.count}: done; process 0 writes {args.out}")
        return 0
    report = write_outputs(result, config)
    print(f"\n{len(result.table)} data points; report: {report} ({time.perf_counter() - start:.0f} s)")
    # (a metric that cannot run here was named, with why, in one line when the search started; the report lists it)
    for model in result.models:
        if model.quality["problems"]:
            print(f"warning: {model.label} looks degenerate: {'; '.join(model.quality['problems'])}")
    for post, df in result.ranking.correlations.items():
        print(f"  {post:8s} best {df['pregen'].iloc[0]:32s} R^2={df['all_R^2'].iloc[0]:.3f}")
    return 0


def _demo(args) -> int:
    from .pipeline import demo_config
    return _search(demo_config(args.quick), args)


def _run(args) -> int:
    from .pipeline import SearchConfig
    return _search(SearchConfig.load(args.config), args, args.config)


def _rank(args) -> int:
    from . import io, postgen, ranking
    out = io.check_out_folder(args.out)
    table = ranking.read_table(args.table)
    pregen = ranking.pregen_columns(table)
    if not pregen and not args.pregen:
        raise ValueError(f"{args.table}: no pre-gen columns recognised (names like mean_max_normcount_prefix0; "
                         "name others with --pregen)")
    if args.postgen:
        post = [name.strip() for name in args.postgen.split(",")]
        missing = [c for c in post if c not in table.columns]
        if missing:
            raise ValueError(f"{args.table}: no post-gen column {missing[0]!r} (--postgen)")
        both = [c for c in post if c in pregen]
        if both:
            raise ValueError(f"--postgen {args.postgen}: {both[0]!r} is a pre-gen column of {args.table}; "
                             "name post-gen columns only (they are what the pre-gen metrics are ranked against)")
    else:
        post = ranking.postgen_columns(table, (*ranking.KNOWN_POSTGEN, *postgen.metric_names()))
        if not post:
            raise ValueError(f"{args.table}: no post-gen columns found; name them with --postgen METEOR,CIDEr,...")
    if len(set(post)) != len(post):
        raise ValueError(f"--postgen names a column twice: {args.postgen}")
    if args.group_by and args.group_by not in table.columns:
        raise ValueError(f"{args.table}: no column {args.group_by!r} to group by")
    pregen += _named_columns(args.table, table, args.pregen, "--pregen", exclude=pregen + post)
    _refuse_unknown_columns(args, table, pregen, post)
    ranking.check_numeric(table, post, finite=True)
    ranking.check_numeric(table, pregen, finite=False)
    try:
        result = ranking.rank(table, post, pregen, group_by=args.group_by)
    except ValueError as err:
        raise ValueError(f"{args.table}: {err}") from None
    if not result.correlations:
        raise ValueError(f"{args.table}: {'; '.join(result.excluded_postgen.values())}")
    for why in result.excluded_postgen.values():
        print(f"warning: {why}; ranked against the other post-gen columns", file=sys.stderr)
    tokenizer = (", ".join(map(str, table["tokenizer"].unique())) if "tokenizer" in table.columns
                 else "as in the input table (no tokenizer column)")
    from .ranking import decisions
    model_level = {}
    if decisions.NUM_STRATA in table.columns and (table[decisions.NUM_STRATA] == 1).sum() >= 2:
        try:
            model_level = ranking.decision_outputs(table, result.correlations, args.group_by)
        except ValueError as err:  # a step after the table: say why it was skipped, write the rest
            print(f"warning: model-level decisions not done for this table: {' '.join(str(err).split())}",
                  file=sys.stderr)
    if args.unit_tests:
        from .meta.model_tests_report import add_unit_test_flags, read_unit_tests
        tests = read_unit_tests(args.unit_tests)
    with io.staged_folder(out) as staging:
        ranking.write_ranking(result, staging, tokenizer, source=str(args.table))
        ranking.write_files(staging, model_level, tokenizer)
        if args.unit_tests:
            add_unit_test_flags(staging, result, tests, str(args.unit_tests), tokenizer, str(args.table))
    print(f"ranked {len(pregen) - len(result.excluded)} of {len(pregen)} pre-gen metrics against "
          f"{', '.join(result.correlations)}; wrote {out}")
    for name, df in result.correlations.items():
        print(f"  {name:8s} best {df['pregen'].iloc[0]}  R^2={df['all_R^2'].iloc[0]:.3f}")
    return 0


KNOWN_TEXT_COLUMNS = ("tokenizer", "vocabulary", "units", "decoding")  # what a search's tables carry besides ids


def _named_columns(path, table, text: str | None, option: str, exclude=()) -> list[str]:
    """Columns named by a comma-separated option, each checked to exist (and not be used twice)."""
    if not text:
        return []
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        if name not in table.columns:
            raise ValueError(f"{path}: no column {name!r} ({option})")
        if name in exclude:
            raise ValueError(f"{option} {name}: already ranked (a pre-gen or post-gen column)")
    return names


def _refuse_unknown_columns(args, table, pregen: list[str], post: list[str]) -> None:
    """A column that rank would not read is an error, not a silent omission: name it with
    --pregen to rank it as a pre-gen metric (a perplexity column of your own, say), or with --ignore."""
    from . import postgen, ranking
    from .pipeline.config import ID_COLUMNS
    ignored = _named_columns(args.table, table, args.ignore, "--ignore", exclude=pregen + post)
    known_post = {name.lower() for name in (*ranking.KNOWN_POSTGEN, *postgen.metric_names())}
    known = {*ID_COLUMNS, *KNOWN_TEXT_COLUMNS, *pregen, *post, *ignored, args.group_by}
    unknown = [c for c in table.columns if c not in known and str(c).lower() not in known_post]
    if unknown:
        name = unknown[0]
        raise ValueError(f"{args.table}: column {name!r} is not a pre-gen metric name (like "
                         "mean_max_normcount_prefix0), a post-gen metric or an id column "
                         f"({', '.join(ID_COLUMNS)}); rank it as a pre-gen metric with --pregen {name}, or leave it "
                         f"out with --ignore {name}" + (f" ({len(unknown)} such columns: {', '.join(map(str, unknown))})"
                                                         if len(unknown) > 1 else ""))


def _score(args) -> int:
    from . import io
    from .pipeline.finished import FinishedSearch
    from .pipeline.score import render, score
    run = FinishedSearch.open(args.search)
    out = io.check_out_folder(args.out) if args.out else None
    scores = score(run, args.refprobs, args.pregen, args.level, args.captions)
    print(render(scores))
    if out is not None:
        with io.staged_folder(out) as staging:
            io.write_tsv(scores.predictions, staging / "scores.tsv")
            io.write_tsv(scores.order.assign(tokenizer=run.tokenizer), staging / "order.tsv")
            io.write_tsv(scores.pairs.assign(tokenizer=run.tokenizer), staging / "pairs.tsv")
        print(f"wrote {out}/scores.tsv, order.tsv, pairs.tsv")
    return 0


def _select(args) -> int:
    from pathlib import Path

    from . import io
    from .pipeline.finished import FinishedSearch
    from .pipeline.select import check_metric, run_select, summary_lines
    from .ranking.racing import RaceSettings
    check_metric(args.metric)
    try:
        settings = RaceSettings(args.budget, args.confidence, args.seed)
    except ValueError as err:
        raise ValueError(f"--{err}") from None
    for path in args.checkpoints:
        if not Path(path).is_file():
            raise ValueError(f"--checkpoints: {path}: file not found")
    out = io.check_out_folder(args.out)
    run = FinishedSearch.open(args.search)
    if args.screen and not 0 < args.screen_keep <= 1:
        raise ValueError(f"--screen-keep {args.screen_keep}: expected a share in (0, 1]")
    table, selection, notes = run_select(run, args.split, args.metric, settings, args.checkpoints,
                                         progress=not args.no_progress, assist=args.assist,
                                         screen=args.screen_keep if args.screen else None)
    for note in notes:
        print(note)
    with io.staged_folder(out) as staging:
        io.write_tsv(table, staging / "select.tsv")
    print("\n".join(summary_lines(table, selection, args.split)))
    print(f"wrote {out}/select.tsv")
    return 0


def _export_references(args) -> int:
    import warnings
    from pathlib import Path

    from .pipeline import SearchConfig
    from .pipeline.export import export_references
    if Path(args.out).is_dir():
        raise ValueError(f"--out {args.out}: is a folder; give the name of the JSONL file to write")
    with warnings.catch_warnings(record=True) as caught:  # e.g. Flickr8k test-list lines that are not images
        warnings.simplefilter("always")
        rows = export_references(SearchConfig.load(args.config), args.out)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    images = len({row.image for row in rows})
    print(f"wrote {args.out}: {len(rows)} references of {images} test images, in RefProbs order "
          "(image, then reference)")
    return 0


def _mutt(args) -> int:
    from .meta import run_mutt
    result = run_mutt(args.out, data=args.data, ks=args.refs, metrics=args.metrics, progress=print)
    for name, why in result.unavailable.items():
        print(f"{name} unavailable: {why}")
    print(f"wrote {args.out}/mutt.tsv, mutt_heatmap.png, report.md ({result.seconds:.0f} s); mean accuracy (%):")
    print(result.table.pivot_table(index="metric", columns="refs", values="accuracy", sort=False).round(1).to_string())
    return 0


def _unit_tests(args) -> int:
    from .meta.model_tests import run_unit_tests
    from .meta.model_tests_report import pass_rates, top_metrics_table
    run = run_unit_tests(args.search, args.out, seed=args.seed, progress=None if args.no_progress else print)
    for note in run.notes:
        print(note)
    rates = pass_rates(run.table)
    print(f"wrote {args.out} ({run.seconds:.0f} s); mean pass rate (%) over the {len(rates)} metrics: "
          + ", ".join(f"{test} {rates[test].mean():.1f}" for test in rates.columns))
    print(top_metrics_table(run.table, run.correlations))
    return 0


def _judgments(args) -> int:
    from .meta import run_judgments
    result = run_judgments(args.out, flickr8k=args.flickr8k, metrics=args.metrics, progress=print)
    for name, why in result.unavailable.items():
        print(f"{name} unavailable: {why}")
    print(f"wrote {args.out}/judgments.tsv, report.md ({result.seconds:.0f} s); Kendall tau x 100:")
    table = result.table.assign(tau=100 * result.table["tau"])
    print(table.pivot_table(index="metric", columns=["dataset", "variant"], values="tau", sort=False)
          .round(1).to_string())
    return 0


def _doctor(args) -> int:
    import shutil

    import jax

    from . import postgen
    java = shutil.which("java")
    print(f"java: {java or 'NOT FOUND (METEOR and SPICE need it: apt-get install default-jre-headless)'}")
    print(f"JAX {jax.__version__} devices: {', '.join(f'{d.platform}:{d.device_kind}' for d in jax.devices())}")
    options = postgen.PostgenOptions(corenlp_dir=args.corenlp_dir or "")
    print("post-gen metrics:")
    for name, (ok, why) in postgen.metric_availability(options).items():
        print(f"  {name:8s} {'available' if ok else 'UNAVAILABLE'}: {why}")
    return 0


def _seed(text: str) -> int:
    from .settings import MAX_SEED
    if not text.isdigit() or int(text) > MAX_SEED:
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed (an integer 0..{MAX_SEED})")
    return int(text)


def _workers(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"not a number of workers (0, 1, 2, ...): {text!r}")
    return int(text)


def _trainers(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a number of trainers (1, 2, ...): {text!r}")
    return int(text)


def _scale_arguments(parser: argparse.ArgumentParser) -> None:
    """Several processes or hosts (JAX's distributed runtime) and the post-gen worker pool."""
    group = parser.add_argument_group("several processes or hosts (README: Running on several devices, "
                                      "processes and hosts)")
    group.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                       help="address of process 0, which the others connect to (jax.distributed.initialize)")
    group.add_argument("--num-processes", type=int, default=None, metavar="N",
                       help="how many processes in all; alone, it starts N processes on this machine")
    group.add_argument("--process-id", type=int, default=None, metavar="K", help="this process's number, 0..N-1")
    group.add_argument("--distributed", action="store_true",
                       help="let JAX detect the processes from the cluster (Slurm, Open MPI, ...) instead")
    parser.add_argument("--workers", type=_workers, default=None, metavar="N",
                        help="post-gen worker processes scoring one model while the next trains "
                             "(default: one per core beyond the first, at most 8, of this process's share of "
                             "the machine; 0: none)")
    parser.add_argument("--trainers", type=_trainers, default=None, metavar="N",
                        help="models trained at once, in threads (default on a CPU: one per core of this "
                             "process's share, at most 4; 1 on an accelerator)")


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors in the one-line form of every other error (and exit code 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pregen-search", description=(
        "Pre-gen metrics: rank ways of scoring a caption generator from its reference probabilities "
        "by how well they predict post-gen metrics (CIDEr, METEOR, WMD, ...)."))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    demo = sub.add_parser("demo", help="train 5 architectures x 3 runs on the built-in dataset, then rank")
    demo.add_argument("--out", default="runs/demo", help="run folder (its cache/ resumes a rerun; default runs/demo)")
    demo.add_argument("--quick", action="store_true", help="a small version that finishes in about 2 minutes")
    demo.add_argument("--no-progress", action="store_true", help="no progress bars")
    _scale_arguments(demo)
    demo.set_defaults(func=_demo)

    run = sub.add_parser("run", help="run a search from a TOML config (see search/configs/)")
    run.add_argument("--config", required=True, help="the search's TOML config")
    run.add_argument("--out", required=True, help="run folder (its cache/ resumes a rerun)")
    run.add_argument("--no-progress", action="store_true", help="no progress bars")
    _scale_arguments(run)
    run.set_defaults(func=_run)

    rank = sub.add_parser("rank", help="rank the pre-gen metrics of a table of data points")
    rank.add_argument("--table", required=True, help="TSV/CSV shaped like pregen-metrics-2018/data.txt")
    rank.add_argument("--out", required=True, help="output folder")
    rank.add_argument("--group-by", default=None, help="column defining groups (e.g. dataset)")
    rank.add_argument("--postgen", default=None, help="comma-separated post-gen columns (default: detected)")
    rank.add_argument("--pregen", default=None, help="comma-separated columns to rank as pre-gen metrics besides "
                                                     "those named like one (e.g. a perplexity column of your own)")
    rank.add_argument("--ignore", default=None, help="comma-separated columns to leave out (any other column rank "
                                                     "does not know is an error)")
    rank.add_argument("--unit-tests", default=None, help="a pregen_unit_tests.tsv: flag the metrics that fail a "
                                                         "meaning-preserving test (pass rate below 50%%)")
    rank.set_defaults(func=_rank)

    score = sub.add_parser("score", help="new models' post-gen scores predicted from their reference probabilities, "
                                         "with intervals, their order, and the pairs the intervals cannot separate")
    score.add_argument("--search", required=True, help="a finished search's run folder (its models calibrate)")
    score.add_argument("--refprobs", required=True, nargs="+", metavar="NPZ",
                       help="each new model's RefProbs .npz, computed on the search's test references "
                            "(RefProbs.save records their fingerprint)")
    score.add_argument("--captions", nargs="+", default=None, metavar="FILE",
                       help="each model's captions of the test images (JSONL or TSV keyed by image_id, or one a line "
                            "in test-split order; one file per --refprobs file, same order): its post-gen scores are "
                            "measured beside the predictions")
    score.add_argument("--out", default=None, help="also write scores.tsv, order.tsv and pairs.tsv into this folder")
    score.add_argument("--pregen", default=None, help="the pre-gen metric to calibrate (default: each post-gen "
                                                      "metric's best by R^2 in the search)")
    score.add_argument("--level", type=float, default=0.9, help="prediction interval level (default 0.9)")
    score.set_defaults(func=_score)

    select = sub.add_parser("select", help="choose the best of a search's models by racing: real post-gen scores "
                                           "on growing random subsets, dropping models shown worse")
    select.add_argument("--search", required=True, help="a finished search's run folder (its models race)")
    select.add_argument("--checkpoints", nargs="*", default=[], metavar="MSGPACK",
                        help="more saved models of this package to race beside the search's")
    select.add_argument("--metric", default="CIDEr", help="a post-gen metric whose corpus score is the mean of "
                                                          "per-image scores: CIDEr (default), ROUGE_L, WMD, SPICE")
    select.add_argument("--budget", type=float, default=0.1,
                        help="share of (models x images) that may be decoded and scored (default 0.1)")
    select.add_argument("--split", default="val", choices=["val", "test"],
                        help="val (default: select on validation images) or test (check a pick against the "
                             "search's whole-split scores)")
    select.add_argument("--confidence", type=float, default=0.95,
                        help="1 - alpha for the whole race (Bonferroni over rounds and models; default 0.95)")
    select.add_argument("--seed", type=int, default=0, help="the random order of the images (default 0)")
    select.add_argument("--assist", default="none", choices=["none", "perplexity", "pregen", "both"],
                        help="predict per-image scores from one teacher-forced pass over the split (per-image "
                             "perplexity, pre-gen tier space, or both) and race on prediction-powered estimates "
                             "(default none: plain racing); the passes' seconds are counted")
    select.add_argument("--screen", action="store_true",
                        help="never decode the models the prior (validation perplexity) ranks below the "
                             "--screen-keep share")
    select.add_argument("--screen-keep", type=float, default=0.5,
                        help="with --screen, the share of models that race, best by the prior (default 0.5)")
    select.add_argument("--out", required=True, help="output folder (select.tsv)")
    select.add_argument("--no-progress", action="store_true", help="no progress bars")
    select.set_defaults(func=_select)

    export = sub.add_parser("export-references", help="write the test references a search scores (JSONL, in "
                                                       "RefProbs order) for a model that lives elsewhere")
    export.add_argument("--config", required=True, help="the search's TOML config (only [data] is read, and "
                                                         "[models] vocabulary for BPE pieces)")
    export.add_argument("--out", required=True, help="the JSONL file to write: one reference a line with image_id, "
                                                     "image, ref, text, tokens (and pieces, for a subword vocabulary)")
    export.set_defaults(func=_export_references)

    mutt = sub.add_parser("mutt", help="MUTT metric unit tests of the post-gen metrics (corrupted sentences)")
    mutt.add_argument("--out", required=True, help="output folder (mutt.tsv, mutt_heatmap.png, report.md)")
    mutt.add_argument("--data", default=None, help="MUTT test sets (default: ../shared/data/mutt)")
    mutt.add_argument("--refs", default="5,10,20", help="numbers of references, comma-separated (default 5,10,20)")
    mutt.add_argument("--metrics", default=None, help="comma-separated post-gen metrics (default: all registered)")
    mutt.set_defaults(func=_mutt)

    unit = sub.add_parser("unit-tests", help="MUTT-style unit tests of the pre-gen metrics: corrupt a finished "
                                             "search's models and check each metric reacts as CIDEr does")
    unit.add_argument("--search", required=True, help="a finished search's run folder (pregen-search run/demo)")
    unit.add_argument("--out", required=True, help="output folder (pregen_unit_tests.tsv, report.md, cache/); the "
                                                    "run folder itself adds the pass rates to its report")
    unit.add_argument("--seed", type=_seed, default=0, help="seed of the noise and the image shuffles (default 0)")
    unit.add_argument("--no-progress", action="store_true", help="no line per model")
    unit.set_defaults(func=_unit_tests)

    judgments = sub.add_parser("judgments", help="Kendall tau of the post-gen metrics with Flickr8k human judgments")
    judgments.add_argument("--out", required=True, help="output folder (judgments.tsv, report.md)")
    judgments.add_argument("--flickr8k", default=None, help="Flickr8k folder (default: ../shared/data/flickr8k)")
    judgments.add_argument("--metrics", default=None, help="comma-separated post-gen metrics (default: all registered)")
    judgments.set_defaults(func=_judgments)

    doctor = sub.add_parser("doctor", help="which post-gen metrics and JAX devices this machine has")
    doctor.add_argument("--corenlp-dir", default=None, help="folder with the Stanford CoreNLP 3.6.0 jars (SPICE)")
    doctor.set_defaults(func=_doctor)
    return parser


def main(argv=None) -> int:
    """Run one command; returns its exit code. The Ctrl-C handling it sets up (a quiet handler
    after the one line) is undone on return, so a caller in Python keeps its own."""
    import signal
    import threading

    from .processes import interrupts_never_swallowed
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main_thread else None
    try:
        _interrupts_from_here()
        with interrupts_never_swallowed():  # a Ctrl-C inside a gc callback is not lost
            return _main(argv)
    finally:
        if main_thread and previous is not None:
            signal.signal(signal.SIGINT, previous)


def _main(argv) -> int:
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        print("pregen-search: interrupted", file=sys.stderr)
        return 130
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return args.func(args)
    except (ValueError, OSError) as err:
        message = " ".join(str(err).split())  # one line, whatever the message held
        print(f"pregen-search {args.command}: error: {message}", file=sys.stderr)
        return 2
    except RuntimeError as err:
        from .pipeline.late import LateStepFailed
        if not isinstance(err, LateStepFailed):
            raise
        print(f"pregen-search {args.command}: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        _quiet_interrupts()
        print(f"pregen-search {args.command}: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


def _interrupts_from_here() -> None:
    """A search process another one started (``--num-processes``) ends silently on Ctrl-C (its parent
    reports it); every process then takes a Ctrl-C deferred while it started (``processes``)."""
    import os

    from .processes import PARENT_REPORTS_INTERRUPTS, accept_interrupts
    if os.environ.get(PARENT_REPORTS_INTERRUPTS) == "1":
        _quiet_interrupts()
    accept_interrupts()


def _quiet_interrupts() -> None:
    """After the one line about Ctrl-C, a second Ctrl-C (or one arriving while Python shuts down its
    worker pools) ends the process at once, with no traceback."""
    import os
    import signal
    try:
        signal.signal(signal.SIGINT, lambda *_: os._exit(130))
    except ValueError:  # not the main thread: nothing to quieten
        pass


def console() -> None:
    """The ``pregen-search`` command: ``main``, then exit. After a Ctrl-C (exit 130, its one line
    written and the run's workers ended) the process ends at once, its output flushed: threads still
    inside XLA (a trainer, a compile) must not meet the interpreter's shutdown, which can crash."""
    code = main()
    if code == 130:
        import os
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(code)


if __name__ == "__main__":
    console()
