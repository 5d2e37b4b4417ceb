#!/usr/bin/env python3
"""Two or more kfuse binaries on the same models, alternated round by round.

Each round runs `BIN profile MODEL --threads T --repeat N --json` for every
binary on every model, pinned to the same CPUs, in an order reversed from
one round to the next, so that a burst of load from the machine's
neighbours falls on no binary in particular. Prints the median and the best
round of each binary's step total per model, and with --steps the median of
each named step. With --compile OUT it times `BIN compile MODEL -o OUT`
(all cores, the package written to OUT) instead.

    python3 bench/ab_profile.py OLD/kfuse NEW/kfuse --models resnet18,mobilenet_v2 --rounds 6
    python3 bench/ab_profile.py OLD/kfuse NEW/kfuse --models resnet50 --steps 53,56 --rounds 4
    python3 bench/ab_profile.py OLD/kfuse NEW/kfuse --models mobilenet_v2 --cpu haswell
    python3 bench/ab_profile.py OLD/kfuse NEW/kfuse --models resnet50,bert --compile /dev/shm/ab.kfpkg --rounds 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def profile(binary, model, threads, cpus, repeat, cpu=None):
    target = ['--cpu', cpu] if cpu else []
    out = subprocess.run(['taskset', '-c', cpus, binary, 'profile', model, '--threads', str(threads),
                          '--repeat', str(repeat), '--json'] + target, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f'{binary} profile {model} failed:\n{out.stderr}')
    return json.loads(out.stdout)


def compile_seconds(binary, model, out):
    start = time.monotonic()
    p = subprocess.run([binary, 'compile', model, '-o', out], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f'{binary} compile {model} failed:\n{p.stderr}')
    return time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('binaries', nargs='+', help='kfuse binaries to compare')
    ap.add_argument('--models', required=True, help='comma-separated zoo names (bench/zoo/out/NAME.onnx) or paths')
    ap.add_argument('--rounds', type=int, default=6)
    ap.add_argument('--repeat', type=int, default=15, help='runs per profile')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--cpus', help='taskset CPU list (default: the last THREADS CPUs)')
    ap.add_argument('--cpu', help='generate code for this CPU (kfuse --cpu: haswell runs AVX2 code here)')
    ap.add_argument('--steps', default='', help='comma-separated step indices to report too')
    ap.add_argument('--compile', metavar='OUT', help='time kfuse compile (the package written to OUT) instead')
    a = ap.parse_args()
    cpus = a.cpus or ','.join(str(c) for c in range(os.cpu_count() - a.threads, os.cpu_count()))
    models = [m if os.path.exists(m) else os.path.join(HERE, 'zoo', 'out', m + '.onnx') for m in a.models.split(',')]
    steps = [int(s) for s in a.steps.split(',') if s]
    totals = {(b, m): [] for b in a.binaries for m in models}
    per_step = {(b, m, s): [] for b in a.binaries for m in models for s in steps}
    for r in range(a.rounds):
        order = a.binaries if r % 2 == 0 else a.binaries[::-1]
        for m in models:
            for b in order:
                if a.compile:
                    totals[(b, m)].append(compile_seconds(b, m, a.compile))
                    continue
                d = profile(b, m, a.threads, cpus, a.repeat, a.cpu)
                totals[(b, m)].append(d['steps_total_us'] / 1000)
                times = {s['index']: s['mean_us'] for s in d['steps']}
                for s in steps:
                    per_step[(b, m, s)].append(times.get(s, float('nan')))
    for m in models:
        name = os.path.splitext(os.path.basename(m))[0]
        unit = 's' if a.compile else 'ms'
        print(name + ': ' + '  '.join(f'{b}: median {statistics.median(totals[(b, m)]):.2f} {unit}, best '
                                       f'{min(totals[(b, m)]):.2f}' for b in a.binaries))
        if a.compile:
            continue
        for s in steps:
            print(f'  step {s}: ' + '  '.join(f'{b}: {statistics.median(per_step[(b, m, s)]):.0f} us'
                                             for b in a.binaries))


if __name__ == '__main__':
    main()
