"""`python -m scheduler_tools.simulate TRACE.csv [options]`: replay a job trace under policies.

Examples:
  python -m scheduler_tools.simulate philly_50k.csv --quotas philly_vc_quota.csv --policy kai
  python -m scheduler_tools.simulate philly_busy_2k.csv --quotas philly_vc_quota.csv \\
      --vc-scale 0.5 --policy fifo-strict --policy kai --out out/2k-half
  python -m scheduler_tools.simulate alibaba_openb_gpu_pods.csv --nodes 8x8 --policy kai \\
      --round-up-fractions
  python -m scheduler_tools.simulate alibaba_openb_gpu_pods.csv --nodes 8x8 --time-scale 0.25

The cluster is --nodes COUNTxGPUS; with --quotas and no --nodes it is the sum of the (scaled)
VC nodes. Without --quotas every team of the trace gets an equal share of the cluster as quota.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from scheduler.bands import check_bands
from scheduler.minruntime import parse_duration, parse_min_runtime
from scheduler.predict import BURST_GAP_S, EvalJob, Predictor, evaluate

from .engine import Cluster, SimOptions, Simulation
from .metrics import RunResult
from .policies import POLICIES, PolicySpec, get_policy
from .reference import pooled_fifo
from .report import summary_table, team_table, write_csvs
from .trace import Trace, parse_nodes, read_quotas, read_trace
from .users import (
    DEFAULT_EXPONENT,
    DEFAULT_SEED,
    parse_users,
    split_users,
    user_table,
    write_user_csvs,
)


def build_cluster(args: argparse.Namespace, trace: Trace) -> Cluster:
    """Nodes and quotas from the arguments (see the module doc)."""
    node_gpus = args.gpus_per_node
    count = None
    if args.nodes:
        count, node_gpus = parse_nodes(args.nodes)
    quota_nodes: dict[str, int] = {}
    if args.quotas:
        vcs = read_quotas(args.quotas, node_gpus, args.vc_scale)
        quotas = {team: vc.gpus for team, vc in vcs.items()}
        quota_nodes = {team: vc.nodes for team, vc in vcs.items()}
        if count is None:
            count = sum(quota_nodes.values())
        source = f"quotas {Path(args.quotas).name} x{args.vc_scale:g}"
    else:
        if count is None:
            raise SystemExit("give --nodes COUNTxGPUS, or --quotas to size the cluster")
        teams = trace.teams or ["all"]
        quotas = dict.fromkeys(teams, count * node_gpus / len(teams))
        source = f"equal quotas over {len(teams)} team(s)"
    label = f"{count}x{node_gpus} ({count * node_gpus} GPUs), {source}"
    return Cluster(count, node_gpus, quotas, quota_nodes, label)


def predictor_report(trace: Trace, args: argparse.Namespace) -> str:
    """The predictor's accuracy on this trace (train on the first half, online after)."""
    jobs = [
        EvalJob(j.submit_s, j.duration_s, j.team, j.gpus, j.user, j.image, j.estimate_s)
        for j in trace.jobs
    ]
    gap = None if args.no_bursts or args.no_censoring else args.burst_gap
    result = evaluate(jobs, 0.5, online=True, predictor=_predictor(args), burst_gap_s=gap)
    bases = ", ".join(f"{basis} {count}" for basis, count in result.by_basis.items())
    return (
        f"predictor (quantile {args.quantile:g}, min_samples {args.min_samples}; first half "
        f"trains, online learning at completion): n={result.n}, MAE {result.mae_s:,.0f} s, "
        f"within 2x {result.within_2x:.3f}; bases: {bases}"
    )


def _predictor(args: argparse.Namespace) -> Predictor:
    return Predictor(quantile=args.quantile, min_samples=args.min_samples)


def parse_bands(text: str) -> tuple[float, ...]:
    """--service-bands "1,10" as GPU-hour thresholds (SystemExit naming the flag otherwise)."""
    try:
        bands = tuple(float(item) for item in text.split(",") if item.strip())
        if not bands:
            raise ValueError("no thresholds")
        check_bands(bands)
    except ValueError:
        raise SystemExit(
            f"--service-bands must be positive GPU-hours in ascending order, e.g. 1,10; "
            f"got {text!r}"
        ) from None
    return bands


def with_bands(spec: PolicySpec, bands: tuple[float, ...] | None) -> PolicySpec:
    """The spec with its service bands replaced, for a policy that has them (L1)."""
    if bands is None or not spec.policy.service_bands:
        return spec
    return replace(spec, policy=replace(spec.policy, service_bands=bands))


def parse_min_runtime_flag(text: str | None, flag: str) -> float | None:
    """A min-runtime flag (R7.4) in seconds, -1 for never, None when not given; SystemExit
    naming the flag."""
    if text is None:
        return None
    try:
        return parse_min_runtime(text)
    except ValueError:
        raise SystemExit(
            f"{flag} takes a duration such as 90s, 30m, 2h or 1d, 0 for none or 'never'; "
            f"got {text!r}"
        ) from None


def parse_duration_flag(text: str, flag: str, zero: bool = True) -> float:
    """A duration flag (90s, 30m, 2h, 1d or plain seconds) in seconds; SystemExit naming the
    flag for anything else, "never", a negative value, or 0 where `zero` is False."""
    try:
        return parse_duration(text, zero)
    except ValueError:
        least = "0 for off" if zero else "more than 0"
        raise SystemExit(
            f"{flag} takes a duration such as 90s, 30m, 12h or 1d ({least}); got {text!r}"
        ) from None


def with_min_runtime(spec: PolicySpec, reclaim: float | None, preempt: float | None) -> PolicySpec:
    """The spec with the cluster's min-runtime defaults (R7.4) replaced where given."""
    changes = {}
    if reclaim is not None:
        changes["reclaim_min_runtime_s"] = reclaim
    if preempt is not None:
        changes["preempt_min_runtime_s"] = preempt
    return replace(spec, policy=replace(spec.policy, **changes)) if changes else spec


def _runtime_label(reclaim: float | None, preempt: float | None) -> str:
    parts = [
        f"{what} min runtime {'never' if value < 0 else f'{value:g} s'}"
        for what, value in (("reclaim", reclaim), ("preempt", preempt))
        if value
    ]
    return f", {', '.join(parts)}" if parts else ""


def _predictor_label(args: argparse.Namespace) -> str:
    """The setting's note on a predictor other than the default (bursts every 60 s)."""
    if args.no_censoring:
        return ", no censoring"
    if args.no_bursts:
        return ", no bursts"
    if args.burst_gap != BURST_GAP_S:
        return f", burst gap {args.burst_gap:g} s"
    return ""


def parser() -> argparse.ArgumentParser:
    """The command line (documented in docs/simulation.md)."""
    p = argparse.ArgumentParser(
        prog="python -m scheduler_tools.simulate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _cluster_arguments(p)
    _run_arguments(p)
    _reference_arguments(p)
    _policy_arguments(p)
    _predictor_arguments(p)
    _user_arguments(p)
    _rack_arguments(p)
    _output_arguments(p)
    return p


def _rack_arguments(p: argparse.ArgumentParser) -> None:
    """Racks and the preferred-rack constraint (issue 38, docs/topology.md)."""
    p.add_argument(
        "--racks-of", type=int, default=0, metavar="N",
        help="group the nodes in racks of N, in name order (0: no racks)",
    )  # fmt: skip
    p.add_argument(
        "--preferred-rack", action="store_true",
        help="with --racks-of, every job of several pods prefers one rack (R23.3)",
    )  # fmt: skip


def _user_arguments(p: argparse.ArgumentParser) -> None:
    """Users inside the teams and their per-user limits (issue 36, scheduler_tools/simulate/
    users.py)."""
    p.add_argument(
        "--split-users", metavar="LOW-HIGH",
        help="give each team's jobs without a user to LOW-HIGH users (e.g. 5-20), Zipf-weighted",
    )  # fmt: skip
    p.add_argument("--user-seed", type=int, default=DEFAULT_SEED, help="seed of --split-users")
    p.add_argument(
        "--user-zipf", type=float, default=DEFAULT_EXPONENT, help="Zipf exponent of --split-users"
    )
    p.add_argument(
        "--user-max-gpus", type=float, help="per-user limit: GPUs one user holds in a team (R21.1)"
    )
    p.add_argument(
        "--user-max-running", type=int, help="per-user limit: running jobs per user (R21.2)"
    )


def _cluster_arguments(p: argparse.ArgumentParser) -> None:
    """The trace and the cluster it runs on."""
    p.add_argument("trace", help="job trace CSV")
    p.add_argument("--nodes", help="cluster shape COUNTxGPUS, e.g. 352x8")
    p.add_argument("--gpus-per-node", type=int, default=8, help="with --quotas and no --nodes")
    p.add_argument("--quotas", help="per-team quota CSV (team,nodes[,gpus])")
    p.add_argument("--vc-scale", type=float, default=1.0, help="scale every VC's node count")


def _run_arguments(p: argparse.ArgumentParser) -> None:
    """The policies, where they write, and how the trace is replayed."""
    p.add_argument(
        "--policy",
        action="append",
        choices=list(POLICIES),
        help="policy to run (repeat for several; default kai)",
    )
    p.add_argument("--out", help="directory for summary.csv, per_team.csv, jobs.csv, report.html")
    p.add_argument("--cycle-s", type=float, default=60.0, help="virtual seconds between cycles")
    p.add_argument("--restart", choices=("zero", "checkpoint"), default="zero")
    p.add_argument(
        "--round-up-fractions", action="store_true", help="every fractional request -> 1 GPU"
    )
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        metavar="F",
        help="multiply every submit time by F (durations kept); 0.25 = arrivals 4x as fast",
    )
    p.add_argument("--team-column", default="team", help="column naming the team (e.g. qos)")
    p.add_argument("--limit-jobs", type=int, help="replay only the first N jobs")


def _reference_arguments(p: argparse.ArgumentParser) -> None:
    """Figures printed beside the runs: the predictor's accuracy, the pooled reference."""
    p.add_argument("--predictor-eval", action="store_true", help="print the predictor's accuracy")
    p.add_argument(
        "--pooled-reference",
        action="store_true",
        help="print the queueing of a pooled fluid cluster (no nodes, teams or evictions)",
    )


def _policy_arguments(p: argparse.ArgumentParser) -> None:
    """What the registered policies take from the command line: service bands, min runtimes."""
    p.add_argument(
        "--service-bands",
        metavar="H1,H2,...",
        help="GPU-hour thresholds of the banded policies (kai, kai-backfill, kai-las; 1,10)",
    )
    p.add_argument(
        "--reclaim-min-runtime",
        metavar="DURATION",
        help="R7.4: a job may not be reclaimed until it has run this long (30m, 2h, never)",
    )
    p.add_argument(
        "--preempt-min-runtime",
        metavar="DURATION",
        help="R7.4: a job may not be preempted by its own team until it has run this long",
    )
    p.add_argument(
        "--fairshare-half-life",
        metavar="DURATION",
        help="R2.9/E10 time-based fair share: each team's past usage, decayed with this "
        "half-life (12h, 1d), lowers its over-quota share; 0 or absent: off",
    )
    p.add_argument(
        "--user-fair-share",
        action="store_true",
        help="divide each team's fair share among its active users, with reclaim between them "
        "(R21.4-R21.8; uses the trace's user column; shows the core every pending job)",
    )
    p.add_argument(
        "--fairshare-window",
        metavar="DURATION",
        default="7d",
        help="the usage window of --fairshare-half-life (default 7d, KAI's)",
    )
    p.add_argument(
        "--k-value",
        type=float,
        metavar="K",
        help="R2.9's kValue: how much past usage counts (default 1, KAI's)",
    )


def _predictor_arguments(p: argparse.ArgumentParser) -> None:
    """The run-time predictor's settings, and the earlier predictors for comparison."""
    p.add_argument("--quantile", type=float, default=0.5, help="predictor quantile")
    p.add_argument("--min-samples", type=int, default=3, help="predictor group minimum")
    p.add_argument(
        "--no-censoring",
        action="store_true",
        help="predict from finished jobs only, once at submission, and end running jobs at "
        "start + prediction (the predictor before Kaplan-Meier; for comparison)",
    )
    p.add_argument(
        "--no-bursts",
        action="store_true",
        help="no burst groups, and predict each job once at submission (the Kaplan-Meier "
        "predictor before bursts; for comparison)",
    )
    p.add_argument(
        "--burst-gap",
        type=float,
        default=BURST_GAP_S,
        metavar="SECONDS",
        help="a job submitted within this long of the one before, with the same user, project, "
        f"image and GPUs, joins its burst (default {BURST_GAP_S:g})",
    )


def _output_arguments(p: argparse.ArgumentParser) -> None:
    """The depth bound, the files written and the progress bar."""
    p.add_argument(
        "--no-depth-bound",
        action="store_true",
        help="show the core every pending job (slower; the bound is exact, see the docs)",
    )
    p.add_argument("--jobs-csv", choices=("plain", "gz", "none"), default="plain")
    p.add_argument("--no-html", action="store_true", help="skip report.html")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


@dataclass(frozen=True)
class Overrides:
    """What the command line changes in every registered policy: service bands (L1) and the
    min-runtime defaults (R7.4); None where not given."""

    bands: tuple[float, ...] | None
    reclaim_min: float | None
    preempt_min: float | None
    k_value: float | None = None

    def spec(self, name: str) -> PolicySpec:
        """The registered policy `name` with these overrides."""
        spec = with_bands(get_policy(name), self.bands)
        spec = with_min_runtime(spec, self.reclaim_min, self.preempt_min)
        if self.k_value is not None:
            spec = replace(spec, policy=replace(spec.policy, k_value=self.k_value))
        return spec


def main(argv: list[str] | None = None) -> int:
    """Run every requested policy on the trace, print the tables, write the files."""
    args = parser().parse_args(argv)
    check_arguments(args)
    overrides = parse_overrides(args)
    trace = _read(args)
    cluster = build_cluster(args, trace)
    setting = describe_setting(args, trace, cluster, overrides)
    print(setting + (f"; {trace.skipped} rows skipped" if trace.skipped else ""))
    _print_references(args, trace, cluster)
    results = run_policies(args, trace, cluster, overrides, setting)
    _print_tables(results)
    if args.out:
        _write_files(Path(args.out), results, setting, args)
    return 0


def check_arguments(args: argparse.Namespace) -> None:
    """SystemExit naming the flag whose value makes no sense, or that needs another."""
    if args.vc_scale != 1.0 and not args.quotas:
        raise SystemExit("--vc-scale scales the VCs of --quotas; give --quotas")
    if args.cycle_s <= 0:
        raise SystemExit("--cycle-s must be positive")
    if not 0 < args.time_scale < float("inf"):  # also rejects nan
        raise SystemExit(f"--time-scale must be a positive number, not {args.time_scale:g}")
    if not 0 <= args.burst_gap < float("inf"):
        raise SystemExit(f"--burst-gap must be a number of seconds >= 0, not {args.burst_gap:g}")
    if args.k_value is not None and not 0 <= args.k_value < float("inf"):
        raise SystemExit(f"--k-value must be a number >= 0, not {args.k_value:g}")
    if args.user_max_gpus is not None and not 0 <= args.user_max_gpus < float("inf"):
        raise SystemExit(f"--user-max-gpus must be a number >= 0, not {args.user_max_gpus:g}")
    if args.user_max_running is not None and args.user_max_running < 0:
        raise SystemExit(f"--user-max-running must be >= 0, not {args.user_max_running}")
    if not 0 <= args.user_zipf < float("inf"):
        raise SystemExit(f"--user-zipf must be a number >= 0, not {args.user_zipf:g}")
    if args.racks_of < 0:
        raise SystemExit(f"--racks-of must be a number of nodes >= 0, not {args.racks_of}")
    if args.preferred_rack and not args.racks_of:
        raise SystemExit("--preferred-rack prefers a rack; give --racks-of")
    if args.split_users is not None:
        try:
            parse_users(args.split_users)
        except ValueError as error:
            raise SystemExit(str(error)) from None
    sim_options(args)  # the duration flags, each named when it makes no sense


def parse_overrides(args: argparse.Namespace) -> Overrides:
    """--service-bands and the min-runtime flags, parsed (SystemExit naming a bad one)."""
    return Overrides(
        bands=parse_bands(args.service_bands) if args.service_bands is not None else None,
        reclaim_min=parse_min_runtime_flag(args.reclaim_min_runtime, "--reclaim-min-runtime"),
        preempt_min=parse_min_runtime_flag(args.preempt_min_runtime, "--preempt-min-runtime"),
        k_value=args.k_value,
    )


def _read(args: argparse.Namespace) -> Trace:
    node_gpus = parse_nodes(args.nodes)[1] if args.nodes else args.gpus_per_node
    trace = read_trace(
        args.trace,
        node_gpus=node_gpus,
        round_up_fractions=args.round_up_fractions,
        team_column=args.team_column,
        limit=args.limit_jobs,
        time_scale=args.time_scale,
    )
    if args.split_users is None:
        return trace
    return split_users(trace, parse_users(args.split_users), args.user_seed, args.user_zipf)


def describe_setting(
    args: argparse.Namespace, trace: Trace, cluster: Cluster, overrides: Overrides
) -> str:
    """One line naming the trace, the cluster and every flag that changes the figures."""
    fractions = " (fractions rounded up to 1 GPU)" if args.round_up_fractions else ""
    scale = f", arrivals x{args.time_scale:g}" if args.time_scale != 1.0 else ""
    runtime = _runtime_label(overrides.reclaim_min, overrides.preempt_min)
    return (
        f"{Path(args.trace).name}: {len(trace.jobs)} jobs on {cluster.label}{scale}{fractions}"
        f"{runtime}{_fairshare_label(args, overrides)}{_predictor_label(args)}"
        f"{_users_label(args)}{_racks_label(args)}"
    )


def _racks_label(args: argparse.Namespace) -> str:
    """The setting's note on racks (issue 38)."""
    if not args.racks_of:
        return ""
    preferred = ", multi-pod jobs prefer one rack" if args.preferred_rack else ""
    return f", racks of {args.racks_of} nodes{preferred}"


def _users_label(args: argparse.Namespace) -> str:
    """The setting's note on split users and per-user limits (issue 36)."""
    label = ""
    if args.split_users is not None:
        label += (f", users {args.split_users} per team (Zipf s={args.user_zipf:g}, "
                  f"seed {args.user_seed})")  # fmt: skip
    limits = [
        f"{args.user_max_gpus:g} GPUs" if args.user_max_gpus is not None else "",
        f"{args.user_max_running} running" if args.user_max_running is not None else "",
    ]
    if any(limits):
        label += ", per-user limit " + " and ".join(part for part in limits if part)
    return label


def _fairshare_label(args: argparse.Namespace, overrides: Overrides) -> str:
    """The setting's note on time-based fair share (R2.9, E10) when it is on."""
    options = sim_options(args)
    k = "" if overrides.k_value is None else f", k {overrides.k_value:g}"
    if not options.fairshare_half_life_s:
        return k
    return (
        f", fair share over time: half-life {options.fairshare_half_life_s / 3600:g} h, "
        f"window {options.fairshare_window_s / 86400:g} d{k}"
    )


def _print_references(args: argparse.Namespace, trace: Trace, cluster: Cluster) -> None:
    if args.predictor_eval:
        print(predictor_report(trace, args))
    if args.pooled_reference:
        pooled = pooled_fifo(trace, cluster.gpus)
        print(
            f"pooled reference (one pool of {cluster.gpus} GPUs, greedy FIFO, no nodes, teams "
            f"or evictions): avg queue {pooled.avg_queue_s:,.0f} s, max "
            f"{pooled.max_queue_s:,.0f} s, makespan {pooled.makespan_s / 86400:.2f} d"
        )


def sim_options(args: argparse.Namespace) -> SimOptions:
    """The simulator's knobs from the command line."""
    return SimOptions(
        cycle_s=args.cycle_s,
        restart=args.restart,
        progress=not args.quiet,
        quantile=args.quantile,
        min_samples=args.min_samples,
        depth_bound=not args.no_depth_bound,
        censoring=not args.no_censoring,
        bursts=not args.no_bursts,
        burst_gap_s=args.burst_gap,
        fairshare_half_life_s=parse_duration_flag(
            args.fairshare_half_life or "0", "--fairshare-half-life"
        ),
        fairshare_window_s=parse_duration_flag(
            args.fairshare_window, "--fairshare-window", zero=False
        ),
        user_max_gpus=args.user_max_gpus,
        user_max_running=args.user_max_running,
        user_fair_share=args.user_fair_share,
        rack_nodes=args.racks_of,
        preferred_rack=args.preferred_rack,
    )


def run_policies(
    args: argparse.Namespace,
    trace: Trace,
    cluster: Cluster,
    overrides: Overrides,
    setting: str,
) -> list[RunResult]:
    """One simulation per --policy (default kai), in order, each labelled with the setting."""
    options = sim_options(args)
    results = []
    for name in args.policy or ["kai"]:
        began = time.perf_counter()
        result = Simulation(trace, cluster, overrides.spec(name), options).run()
        result.setting = setting
        results.append(result)
        if not args.quiet:
            print(f"{name}: {time.perf_counter() - began:.1f} s wall", file=sys.stderr)
    return results


def _print_tables(results: list[RunResult]) -> None:
    print(summary_table(results))
    for result in results:  # issue 38: where multi-node jobs first started
        if "multi_node_jobs" in result.summary:
            total, packed = (result.summary[k] for k in ("multi_node_jobs", "multi_node_one_rack"))
            share = f" ({100 * packed / total:.1f} %)" if total else ""
            print(f"{result.policy}: {packed} of {total} jobs started on several nodes started "
                  f"inside one rack{share}")  # fmt: skip
    if any(result.users for result in results):
        print()
        print(user_table(results))
    for result in results:
        print()
        print(team_table(result))


def _write_files(
    out: Path, results: list[RunResult], setting: str, args: argparse.Namespace
) -> None:
    written = write_csvs(out, results, args.jobs_csv)
    if any(result.users for result in results):
        written += write_user_csvs(out, results)
    if not args.no_html:
        from .report import write_html

        written.append(write_html(out, results, setting))
    print("wrote " + ", ".join(str(p) for p in written))


if __name__ == "__main__":
    sys.exit(main())
