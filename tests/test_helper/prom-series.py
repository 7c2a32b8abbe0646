#!/usr/bin/python3
# prom-series.py [--labels L] INTERVAL STEPS RUN... : the files that
# fstrim-ext --metrics wrote in real runs, as the input_series of a
# `promtool test rules` file (JSON, which is YAML), on promtool's clock.
#
# Each RUN is SIM:START:END:FILE: the run began at Unix time START and
# ended at END (whole seconds, the runs' spans apart), and stands for a run
# at SIM seconds on promtool's clock, which starts at 0. A *_timestamp_seconds
# value other than 0 is moved from the run whose span holds it to that
# run's SIM (a last success carried over from an earlier run moves to the
# earlier run's). From SIM on, until the next run, each of the INTERVAL
# seconds' samples is what FILE holds, as node_exporter would serve it; a
# series FILE lacks is missing then ("_"). L (instance="h",job="node", say)
# is added to every series, as a scrape adds the target's labels.
import json
import sys


def parse(path):
    series = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            # the value has no space; a label value may
            name, value = line.rsplit(" ", 1)
            series[name] = value
    return series


def with_labels(name, extra):
    if not extra:
        return name
    if name.endswith("}"):
        return name[:-1] + "," + extra + "}"
    return name + "{" + extra + "}"


def compress(values):
    out, i = [], 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        n = j - i + 1
        if values[i] == "_":
            out.append("_" if n == 1 else "_x%d" % n)
        else:
            out.append(values[i] if n == 1 else "%s+0x%d" % (values[i], n - 1))
        i = j + 1
    return " ".join(out)


def main(argv):
    extra = ""
    if argv[:1] == ["--labels"]:
        extra, argv = argv[1], argv[2:]
    if len(argv) < 3:
        sys.exit("usage: prom-series.py [--labels L] INTERVAL STEPS SIM:START:END:FILE...")
    interval, steps = int(argv[0]), int(argv[1])
    runs = []
    for spec in argv[2:]:
        sim, start, end, path = spec.split(":", 3)
        runs.append((int(sim), int(start), int(end), parse(path)))
    runs.sort(key=lambda r: r[0])

    def moved(name, value):
        if "_timestamp_seconds" not in name.split("{")[0] or value == "0":
            return value
        real = int(value)
        for sim, start, end, _ in runs:
            if start <= real <= end:
                return str(sim + real - start)
        sys.exit("%s %s: in no run's span" % (name, value))

    names = []
    for run in runs:
        names += [n for n in run[3] if n not in names]
    result = []
    for name in names:
        values = []
        for k in range(steps):
            now = [r for r in runs if r[0] <= k * interval]
            snap = now[-1][3] if now else {}
            values.append(moved(name, snap[name]) if name in snap else "_")
        result.append({"series": with_labels(name, extra), "values": compress(values)})
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
