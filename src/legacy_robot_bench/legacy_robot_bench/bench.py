"""`make bench`: every robot's benchmark, then one table for all of them.

    python -m legacy_robot_bench.bench [--output bench-output] [--only p2os ...] [--quick]

Each robot's benchmark runs as its own process (`python -m legacy_robot_bench.<package>.bench`)
and writes <output>/<name>.json; this reads them back and prints
  * the pipeline table: per robot its main stream's decode rate, the rate a subscriber in
    another process receives with the emulator unthrottled, the real robot's maximum rate,
    headroom (the two divided; target >= 20x), driver CPU at the real rate, and wire ->
    subscriber latency p50 / p99;
  * every robot's own targets (AIBO YUV10 decode time, P2OS cmd_vel -> wire, Nabaztag at 500
    rabbits, urf_builder build times, ...) with their verdicts;
and writes <output>/summary.json and <output>/summary.png. Exit code 1 when a benchmark
failed or a target was missed.
"""

import argparse
import dataclasses
import json
import pathlib
import subprocess
import sys

from legacy_robot_bench.common.bench import (
    FLOOR_RATIO_TARGET,
    HEADROOM_TARGET,
    RECORDING_TARGET,
    SINGLE_FLOOR_TARGET,
    machine_description,
    verdict,
)
from legacy_robot_bringup.registry import discover_plugins
from legacy_robot_common.artifacts import new_figure, save_figure


@dataclasses.dataclass(frozen=True)
class Robot:
    label: str
    package: str
    name: str  # its benchmark's JSON file name
    quick: tuple = ()  # arguments for a short run (--quick)
    module: str = ''  # its benchmark (default legacy_robot_bench.<package>.bench)


def installed_robots():
    """Every installed robot (its plugin names its label and quick arguments; the benchmark
    is `legacy_robot_bench.<package>.bench`), in entry-point order: a new robot package brings
    its own."""
    return tuple(
        Robot(plugin.title, plugin.package, plugin.name, plugin.bench_quick_arguments)
        for plugin in discover_plugins().values()
    )


# beside the robots: what the Foxglove relay and the bag export cost, how soon a waiting
# subscriber has bringup's first message (no pipeline row)
TOOLS = (
    Robot(
        'Foxglove / bags',
        'legacy_robot_bringup',
        'foxglove',
        ('--seconds', '5'),
        'legacy_robot_bench.foxglove_bench',
    ),
    Robot(
        'First data',
        'legacy_robot_bringup',
        'first_data',
        ('--starts', '5', '--cpu', '5'),
        'legacy_robot_bench.first_data_bench',
    ),
    Robot(
        'P2OS world',
        'p2os_driver',
        'p2os_world',
        ('--seconds', '5'),
        'legacy_robot_bench.p2os_driver.world_bench',
    ),
    Robot(
        'P2OS shared world',
        'p2os_driver',
        'p2os_fleet',
        ('--seconds', '5'),
        'legacy_robot_bench.p2os_driver.fleet_bench',
    ),
)
if 'nabaztag' in discover_plugins():  # the rabbit's speech: engines, cache, pings while it talks
    TOOLS += (
        Robot(
            'Nabaztag speech',
            'legacy_robot_bench',
            'nabaztag_speech',
            ('--seconds', '5', '--words', '300'),
            'legacy_robot_bench.nabaztag_bridge.speech_bench',
        ),
        Robot(  # speech to text of the rabbit's recordings: accuracy, speed, pings meanwhile
            'Nabaztag hearing',
            'legacy_robot_bench',
            'nabaztag_hearing',
            ('--seconds', '5'),
            'legacy_robot_bench.nabaztag_bridge.hearing_bench',
        ),
        Robot(  # the rabbits it calls (serverless, pynab): call and event latency, idle CPU
            'Nabaztag kinds',
            'legacy_robot_bench',
            'nabaztag_kinds',
            ('--quick',),
            'legacy_robot_bench.nabaztag_bridge.kinds_bench',
        ),
    )
ROBOTS = installed_robots()  # the soak and the fuzz tests take these too
BENCHMARKS = ROBOTS + TOOLS
PIPELINE_COLUMNS = (
    'robot',
    'main stream',
    'decode /s',
    'unthrottled /s',
    'real max /s',
    'headroom',
    'CPU %',
    'floor %',
    'lean %',
    'CPU / floor',
    'CPU / 1-thread floor',
    'recording',
    'p50 ms',
    'p99 ms',
)


def run_benchmark(robot, output, quick):
    """Run one robot's benchmark as its own process; its table goes to our stdout."""
    command = [
        sys.executable,
        '-m',
        robot.module or f'legacy_robot_bench.{robot.package}.bench',
        '--output',
        str(output),
        *(robot.quick if quick else ()),
    ]
    print(f'--- {robot.label}: {" ".join(command[1:])}', flush=True)
    return subprocess.run(command).returncode


def load_result(output, robot):
    path = pathlib.Path(output) / f'{robot.name}.json'
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def number(value):
    return f'{value:,.0f}' if abs(value) >= 1000 else f'{value:.3g}'


def pipeline_rows(results):
    """One row of PIPELINE_COLUMNS (as text) per robot (its headroom target is among the
    robot's own targets, so target_rows reports a miss)."""
    rows = []
    for robot, result in results.items():
        summary = (result or {}).get('summary')
        if result is not None and summary is None:  # a tool: its targets only
            continue
        if summary is None:
            rows.append((robot.label, 'no result') + ('',) * (len(PIPELINE_COLUMNS) - 2))
            continue
        _, outcome = verdict(summary['headroom'], ('>=', HEADROOM_TARGET))
        latency = summary['latency']
        rows.append(
            (
                robot.label,
                summary['stream'],
                f'{summary["decode_rate"]:,.0f}',
                f'{summary["unthrottled_rate"]:,.0f}',
                f'{summary["real_rate"]:g}',
                f'{summary["headroom"]:,.1f}x {outcome}',
                f'{summary["cpu"]:.2f}',
                *floor_cells(summary),
                recording_cell(summary),
                f'{latency["p50_ms"]:.2f}',
                f'{latency["p99_ms"]:.2f}',
            )
        )
    return rows


def floor_cells(summary):
    """floor %, lean %, CPU / floor and CPU / single-threaded floor with their verdicts; '-'
    for a robot without a floor (the Nabaztag bridge's reference is a canned-reply server,
    among its own targets)."""
    if summary.get('floor') is None:
        return '-', '-', '-', '-'
    _, outcome = verdict(summary['floor_ratio'], ('<=', FLOOR_RATIO_TARGET))
    single = summary.get('driver_over_single_threaded_floor')
    single_cell = '-'
    if single is not None:
        single_cell = f'{single:.2f}x {verdict(single, ("<=", SINGLE_FLOOR_TARGET))[1]}'
    return (
        f'{summary["floor"]:.2f}',
        f'{summary["lean_floor"]:.2f}',
        f'{summary["floor_ratio"]:.2f}x {outcome}',
        single_cell,
    )


def recording_cell(summary):
    """Extra driver CPU with record_path set, with its verdict ('-' if not measured)."""
    if summary.get('recording') is None:
        return '-'
    _, outcome = verdict(summary['recording_extra'], ('<=', RECORDING_TARGET))
    return f'{summary["recording_extra"]:+.1f} % {outcome}'


def target_rows(results):
    """(robot, measure, value, target, result) for every target a robot's benchmark set."""
    rows = []
    for robot, result in results.items():
        for label, target in (result or {}).get('targets', {}).items():
            value = result['results'][label]
            target_text, outcome = verdict(value, tuple(target))
            rows.append((robot.label, label, number(value), target_text, outcome))
    return rows


def format_table(columns, rows):
    widths = [max(len(str(row[i])) for row in (columns, *rows)) for i in range(len(columns))]
    return [
        ' | '.join(
            str(cell).ljust(width) for cell, width in zip(row, widths, strict=False)
        ).rstrip()
        for row in (columns, *rows)
    ]


def write_chart(results, path):
    """Headroom (log scale, with the target) and latency p50 / p99 per robot."""
    summaries = [
        (robot.label, result['summary'])
        for robot, result in results.items()
        if result and 'summary' in result
    ]
    figure = new_figure(10.0, 4.0)
    headroom, latency = figure.subplots(1, 2)
    labels = [label for label, _ in summaries]
    positions = range(len(summaries))
    headroom.bar(labels, [s['headroom'] for _, s in summaries], color='tab:blue')
    headroom.axhline(
        HEADROOM_TARGET, color='tab:red', linestyle='--', label=f'target {HEADROOM_TARGET:g}x'
    )
    headroom.set_yscale('log')
    headroom.set_ylim(bottom=1)
    headroom.set_title('headroom: unthrottled rate / real robot rate')
    headroom.legend()
    width = 0.4
    latency.bar(
        [x - width / 2 for x in positions],
        [s['latency']['p50_ms'] for _, s in summaries],
        width,
        label='p50',
    )
    latency.bar(
        [x + width / 2 for x in positions],
        [s['latency']['p99_ms'] for _, s in summaries],
        width,
        label='p99',
    )
    latency.set_xticks(list(positions), labels)
    latency.set_ylabel('ms')
    latency.set_title('wire -> subscriber latency')
    latency.legend()
    figure.suptitle(machine_description())
    return save_figure(figure, path)


def summarize(results, output):
    """Print both tables, write summary.json and summary.png; → the list of misses."""
    pipeline = pipeline_rows(results)
    targets = target_rows(results)
    missed = [
        f'{robot}: {measure}' for robot, measure, _, _, outcome in targets if outcome == 'MISSED'
    ]
    missed += [f'{robot.label}: no result' for robot, result in results.items() if result is None]
    print(f'\nAll robots on {machine_description()}')
    print('\n'.join(format_table(PIPELINE_COLUMNS, pipeline)))
    print()
    print('\n'.join(format_table(('robot', 'measure', 'value', 'target', 'result'), targets)))
    folder = pathlib.Path(output)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / 'summary.json').write_text(
        json.dumps(
            {
                'machine': machine_description(),
                'headroom_target': HEADROOM_TARGET,
                'robots': {robot.name: result for robot, result in results.items()},
                'missed': missed,
            },
            indent=2,
        )
    )
    written = [folder / 'summary.json']
    if any(result and 'summary' in result for result in results.values()):
        written.append(write_chart(results, folder / 'summary.png'))
    print('\nwritten: ' + ', '.join(str(path) for path in written))
    print('missed: ' + ('; '.join(missed) if missed else 'nothing'))
    return missed


def add_only_argument(parser, entries, these):
    """--only NAME ...: of entries (each with a name), run these only; only_chosen() applies it."""
    names = [entry.name for entry in entries]
    parser.add_argument(
        '--only',
        nargs='+',
        choices=names,
        metavar='NAME',
        help=f'{these} only ({", ".join(names)})',
    )


def only_chosen(entries, args):
    """The entries --only names (all of them without --only), in their order."""
    return [entry for entry in entries if not args.only or entry.name in args.only]


def main(argv=None):
    parser = argparse.ArgumentParser(prog='bench', description=__doc__.split('\n\n')[0])
    parser.add_argument('--output', default='bench-output', help='folder for the JSON and PNG')
    add_only_argument(parser, BENCHMARKS, 'these')
    parser.add_argument(
        '--quick', action='store_true', help='short runs (a smoke test; the numbers are rough)'
    )
    parser.add_argument(
        '--no-run', action='store_true', help='only summarize the JSON files already in --output'
    )
    args = parser.parse_args(argv)
    robots = only_chosen(BENCHMARKS, args)
    failed = []
    if not args.no_run:
        pathlib.Path(args.output).mkdir(parents=True, exist_ok=True)
        for robot in robots:
            (pathlib.Path(args.output) / f'{robot.name}.json').unlink(missing_ok=True)
            if run_benchmark(robot, args.output, args.quick) not in (0, 1):  # 1: a target missed
                failed.append(robot.label)
    results = {robot: load_result(args.output, robot) for robot in robots}
    missed = summarize(results, args.output)
    if failed:
        print(f'benchmarks that failed to run: {", ".join(failed)}', file=sys.stderr)
    return 1 if missed or failed else 0


if __name__ == '__main__':
    sys.exit(main())
