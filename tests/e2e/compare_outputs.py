"""Compares the outputs two `wmap run --values N` printed, value by value.

usage: compare_outputs.py WANT GOT RTOL ATOL
Every output of WANT must be in GOT with as many values, each within
atol + rtol * |want|. Prints "N outputs, M values" or exits with the first
difference.
"""
import sys


def outputs(path):
    out = {}
    for line in open(path):
        if ' = ' in line and ': ' in line:
            head, values = line.split(' = ', 1)
            out[head.split(':')[0]] = [float(v) for v in values.split()
                                       if v != '...']
    return out


def main():
    want, got, rtol, atol = sys.argv[1:5]
    a, b = outputs(want), outputs(got)
    if not a or a.keys() != b.keys():
        sys.exit("outputs differ: %s vs %s" % (sorted(a), sorted(b)))
    for name in a:
        x, y = a[name], b[name]
        if len(x) != len(y):
            sys.exit("%s: %d values vs %d" % (name, len(x), len(y)))
        bad = [i for i, (r, g) in enumerate(zip(x, y))
               if abs(g - r) > float(atol) + float(rtol) * abs(r)]
        if bad:
            i = bad[0]
            sys.exit("%s: %d of %d values beyond rtol %s atol %s; first at "
                     "%d: got %g, want %g" % (name, len(bad), len(x), rtol,
                                              atol, i, y[i], x[i]))
    print("%d outputs, %d values" % (len(a), sum(len(v) for v in a.values())))


main()
